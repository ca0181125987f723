"""Atomic writes touch nothing but their own temporary folder; strict JSONL reading."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from components.core.atomic import (
    FOLDER_MARK,
    atomic_folder,
    atomic_path,
    check_output_file,
    check_output_folder,
    remove_stale_partials,
)
from components.core.errors import InputError
from components.core.jsonio import MAX_JSON_DEPTH, byte_ranges, iter_jsonl, write_text_atomic


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` (hidden ones too) with its bytes (None for folders)."""
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with a raw corpus, a salt, a hidden folder and a git-like folder."""
    (tmp_path / "data" / "raw").mkdir(parents=True)
    (tmp_path / "data" / "raw" / "corpus.jsonl").write_text('{"id": "1", "text": "hi"}\n')
    (tmp_path / "data" / "raw" / "salt").write_text("abc\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / ".other.jsonl.k2j4h_x1").mkdir()  # someone else's folder, not ours
    (tmp_path / ".other.jsonl.k2j4h_x1" / "keep").write_text("x")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", ["", ".", "..", "sub/.."])
def test_a_path_naming_no_file_is_refused_and_nothing_is_touched(
    workspace: Path, name: str
) -> None:
    (workspace / "sub").mkdir()
    before = snapshot(workspace)
    with pytest.raises(InputError, match="names no file"), atomic_path(Path(name)) as tmp:
        tmp.write_text("never")
    assert snapshot(workspace) == before


def test_an_existing_directory_is_not_replaced_by_a_file(workspace: Path) -> None:
    before = snapshot(workspace)
    with pytest.raises(InputError, match="is a directory"), atomic_path(Path("data/raw")) as tmp:
        tmp.write_text("never")
    assert snapshot(workspace) == before


def test_the_working_folder_and_its_parents_are_never_replaced(workspace: Path) -> None:
    before = snapshot(workspace)
    for target in (workspace, workspace.parent):
        with pytest.raises(InputError), atomic_folder(target, "adapter"):
            pass
    assert snapshot(workspace) == before


def test_a_failed_write_removes_only_its_own_temporary_folder(workspace: Path) -> None:
    (workspace / "out.jsonl").write_text("old\n")
    before = snapshot(workspace)
    with pytest.raises(RuntimeError), atomic_path(Path("out.jsonl")) as tmp:
        tmp.write_text("half")
        assert tmp.parent.name.startswith(".out.jsonl.veiltune-")
        raise RuntimeError("the write failed")
    assert snapshot(workspace) == before


def test_a_failed_open_of_the_temporary_name_touches_nothing_else(workspace: Path) -> None:
    before = snapshot(workspace)
    with pytest.raises(IsADirectoryError), atomic_path(Path("out.jsonl")) as tmp:
        tmp.mkdir()
        tmp.open("w")  # the failure the old helper met with an empty name
    assert snapshot(workspace) == before


def test_a_folder_is_replaced_whole_and_kept_when_the_write_fails(workspace: Path) -> None:
    target = workspace / "models" / "adapter"
    with atomic_folder(target, "adapter") as tmp:
        (tmp / "old.bin").write_text("old")
    with atomic_folder(target, "adapter") as tmp:
        (tmp / "new.bin").write_text("new")
    assert sorted(p.name for p in target.iterdir()) == [FOLDER_MARK, "new.bin"]
    assert (target / FOLDER_MARK).read_text() == "adapter\n"
    with pytest.raises(RuntimeError), atomic_folder(target, "adapter") as tmp:
        raise RuntimeError("training died")
    assert sorted(p.name for p in target.iterdir()) == [FOLDER_MARK, "new.bin"]
    assert [p.name for p in target.parent.iterdir()] == ["adapter"]


@pytest.mark.parametrize(
    ("folder", "marker", "message"),
    [
        ("data/raw", None, "lies in data/raw/"),  # the raw corpus, salt, canaries
        (".git", None, "lies in .git/"),
        ("documents", None, "veiltune did not write it"),  # a user's own folder
        ("models/adapter", "adapter\n", "holds veiltune's adapter, not a utility-pack"),
    ],
)
def test_a_folder_veiltune_did_not_write_as_this_kind_is_never_replaced(
    workspace: Path, folder: str, *, marker: str | None, message: str
) -> None:
    target = workspace / folder
    target.mkdir(parents=True, exist_ok=True)
    (target / "precious.txt").write_text("the user's")
    if marker is not None:
        (target / FOLDER_MARK).write_text(marker)
    before = snapshot(workspace)
    with pytest.raises(InputError, match=message), atomic_folder(target, "utility-pack") as tmp:
        (tmp / "pack.json").write_text("{}")
    assert snapshot(workspace) == before


def test_an_empty_folder_and_an_earlier_output_of_the_kind_are_replaced(workspace: Path) -> None:
    empty = workspace / "reports" / "pack"
    empty.mkdir(parents=True)
    with atomic_folder(empty, "utility-pack") as tmp:
        (tmp / "pack.json").write_text("{}")
    with atomic_folder(empty, "utility-pack") as tmp:
        (tmp / "pack.json").write_text('{"again": true}')
    assert (empty / "pack.json").read_text() == '{"again": true}'


def test_a_private_folder_is_owner_only_inside_whatever_the_umask(workspace: Path) -> None:
    previous = os.umask(0)
    try:
        with atomic_folder(workspace / "data" / "raw" / "utility-pack", "pack", raw=True) as tmp:
            (tmp / "train").mkdir()
            (tmp / "train" / "oracle.jsonl").write_text("raw text")
            (tmp / "heldout.jsonl").write_text("raw text")
    finally:
        os.umask(previous)
    pack = workspace / "data" / "raw" / "utility-pack"
    modes = {p.relative_to(pack).as_posix(): p.stat().st_mode & 0o777 for p in pack.rglob("*")}
    assert pack.stat().st_mode & 0o777 == 0o700
    assert modes == {
        "train": 0o700,
        "train/oracle.jsonl": 0o600,
        "heldout.jsonl": 0o600,
        FOLDER_MARK: 0o600,
    }


@pytest.mark.parametrize(
    ("output", "raw", "message"),
    [
        ("params.yaml", False, "is the checkout's params.yaml"),
        ("dvc.lock", False, "is the checkout's dvc.lock"),
        ("dvc.yaml", False, "is the checkout's dvc.yaml"),
        (".git/config", False, "lies in .git/"),
        (".dvc/config", False, "lies in .dvc/"),
        (".veiltune/keys/signing_key.pem", False, "lies in .veiltune/keys/"),
        ("data/raw/salt", False, "lies in data/raw/"),
        ("data/raw/spans.jsonl", False, "lies in data/raw/"),
        ("data/raw/salt", True, "top level of data/raw/ is ingest's"),
        ("data/raw/canaries.jsonl", True, "top level of data/raw/ is ingest's"),
        ("elsewhere/key.pem", False, "is a private key file"),
    ],
)
def test_what_no_command_may_write_over_is_refused(
    workspace: Path, output: str, *, raw: bool, message: str
) -> None:
    for name in ("params.yaml", "dvc.lock", "dvc.yaml", ".git/config", ".dvc/config"):
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text("the checkout's own\n")
    (workspace / "elsewhere").mkdir()
    (workspace / "elsewhere" / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\n")
    before = snapshot(workspace)
    with pytest.raises(InputError, match=message):
        check_output_file(Path(output), create_parent=True, raw=raw)
    assert snapshot(workspace) == before


def test_raw_text_goes_in_a_folder_of_its_own_under_data_raw(workspace: Path) -> None:
    check_output_file(Path("data/raw/grading/summaries.jsonl"), create_parent=True, raw=True)
    check_output_folder(Path("data/raw/utility-pack"), "utility-pack", raw=True)
    with pytest.raises(InputError, match="lies in data/raw/"):
        check_output_folder(Path("data/raw/utility-pack"), "utility-pack")


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_stale_partials_of_the_same_target_are_removed_and_nothing_else(
    workspace: Path,
) -> None:
    host = os.uname().nodename
    dead = workspace / ".out.jsonl.veiltune-dead1234"
    alive = workspace / ".out.jsonl.veiltune-live1234"
    legacy = workspace / ".out.jsonl.ab12cd_3"
    foreign = workspace / ".out.jsonl.zz99yy_1"  # the old shape, but holds more than output
    for folder in (dead, alive, legacy, foreign):
        folder.mkdir()
        (folder / "out.jsonl").write_text("partial")
    (dead / ".veiltune-owner").write_text(f"{dead_pid()} {host}\n")
    (alive / ".veiltune-owner").write_text(f"{os.getpid()} {host}\n")
    (foreign / "notes.txt").write_text("mine")
    removed = remove_stale_partials(workspace / "out.jsonl")
    assert sorted(p.name for p in removed) == sorted([dead.name, legacy.name])
    assert alive.is_dir() and foreign.is_dir()
    assert (workspace / ".other.jsonl.k2j4h_x1" / "keep").is_file()


KILLED_WRITER = """
import sys, time
from pathlib import Path
from components.core.atomic import atomic_path
with atomic_path(Path(sys.argv[1])) as tmp:
    tmp.write_text("partial output")
    print("writing", flush=True)
    time.sleep(60)
"""


def test_a_killed_write_leaves_debris_that_the_next_write_cleans(workspace: Path) -> None:
    from tests.pipeline_repo import REPO_ROOT

    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, "out.jsonl"],
        cwd=workspace,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    debris = [p for p in workspace.iterdir() if p.name.startswith(".out.jsonl.veiltune-")]
    assert len(debris) == 1 and (debris[0] / "out.jsonl").read_text() == "partial output"
    write_text_atomic(workspace / "out.jsonl", "complete\n")
    assert (workspace / "out.jsonl").read_text() == "complete\n"
    assert not any(p.name.startswith(".out.jsonl.") and p.is_dir() for p in workspace.iterdir())


def test_check_output_file_refuses_what_cannot_be_written_safely(workspace: Path) -> None:
    raw = Path("data/raw/corpus.jsonl")
    with pytest.raises(InputError, match="names no file"):
        check_output_file(Path(""))
    with pytest.raises(InputError, match="is a directory"):
        check_output_file(Path("data/raw"))
    (workspace / "data" / "in.jsonl").write_text("{}\n")
    with pytest.raises(InputError, match="names the same file as"):
        check_output_file(Path("data/./in.jsonl"), [Path("data/in.jsonl")])
    with pytest.raises(InputError, match="does not exist"):
        check_output_file(Path("missing/out.jsonl"))
    check_output_file(Path("missing/out.jsonl"), create_parent=True)
    check_output_file(Path("out.jsonl"), [raw])


def test_deeply_nested_json_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(
        '{"id": "1", "text": "ok"}\n{"labels": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    )
    with pytest.raises(InputError, match=r"deep.jsonl:2: JSON nested too deeply"):
        list(iter_jsonl(path))
    shallow_enough = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    path.write_text('{"labels": ' + shallow_enough + "}\n")
    with pytest.raises(InputError, match=r"deep.jsonl:1: JSON nested too deeply"):
        list(iter_jsonl(path))


def test_a_lone_surrogate_is_named_by_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = json.dumps({"id": "1", "text": "emoji \U0001f600"}, ensure_ascii=True)
    path.write_text(good + '\n{"id": "2", "turns": [{"text": "bad \\ud800 here"}]}\n')
    with pytest.raises(InputError, match=r"s.jsonl:2: key 'turns\[0\].text' holds a lone"):
        list(iter_jsonl(path))
    path.write_text(good + "\n")
    assert [obj["text"] for _, obj in iter_jsonl(path)] == ["emoji \U0001f600"]


@pytest.mark.parametrize(
    ("record", "key"),
    [
        ('{"id": "1", "text": "x", "labels": {"score": NaN}}', "labels.score"),
        ('{"id": "1", "text": "x", "labels": {"geo": [1.5, Infinity]}}', r"labels.geo\[1\]"),
        ('{"id": "1", "text": "x", "labels": {"t": -Infinity}}', "labels.t"),
        ('{"id": "1", "text": "x", "labels": {"big": 1e999}}', "labels.big"),
        ('{"id": NaN, "text": "x"}', "id"),
    ],
)
def test_a_number_json_cannot_write_is_named_by_line_and_key(
    tmp_path: Path, record: str, *, key: str
) -> None:
    path = tmp_path / "n.jsonl"
    path.write_text('{"id": "0", "text": "ok", "labels": {"e": 2.5e3}}\n' + record + "\n")
    with pytest.raises(InputError, match=rf"n.jsonl:2: key '{key}' is not a finite number"):
        list(iter_jsonl(path))


def test_a_number_too_long_for_python_is_named_by_line_and_key(tmp_path: Path) -> None:
    limit = sys.get_int_max_str_digits()
    path = tmp_path / "n.jsonl"
    fits = "9" * limit
    path.write_text(
        f'{{"id": "1", "text": "ok", "labels": {{"n": {fits}}}}}\n'
        f'{{"id": "2", "text": "x", "labels": {{"crm": [1, {{"pin": -{"4" * 5000}}}]}}}}\n'
    )
    with pytest.raises(
        InputError, match=r"n.jsonl:2: key 'labels.crm\[1\].pin' is a number of 5000 digits"
    ):
        list(iter_jsonl(path))
    path.write_text(f'{{"id": "1", "text": "ok", "labels": {{"n": {fits}}}}}\n')
    assert [obj["labels"]["n"] for _, obj in iter_jsonl(path)] == [int(fits)]


@pytest.mark.parametrize("target", [1, 7, 64, 10_000])
@pytest.mark.parametrize("ending", ["\n", ""])
def test_byte_ranges_cover_the_file_in_whole_lines_numbered_as_in_it(
    tmp_path: Path, target: int, *, ending: str
) -> None:
    lines = [json.dumps({"n": i, "pad": "x" * (i % 9)}) if i % 5 else "" for i in range(40)]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + ending)
    ranges = byte_ranges(path, target, chunk=5)  # a chunk smaller than a line, too
    assert ranges[0].start == 0 and ranges[-1].end == path.stat().st_size
    assert all(a.end == b.start for a, b in itertools.pairwise(ranges))
    assert [item for r in ranges for item in iter_jsonl(path, r)] == list(iter_jsonl(path))
    if target == 1:
        assert len(ranges) == len(lines)  # one line a range, the blank ones too
