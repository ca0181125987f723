"""`veiltune export --verify BUNDLE`: exit 0 when intact, the list of problems otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.export import build_bundle
from veiltune.cli import main


def bundle(tmp_path: Path) -> Path:
    folder = tmp_path / "exports" / "bundle"
    build_bundle({"a.txt": b"a", "risk/b.csv": b"id\n"}, {"git_commit": "c"}, folder, True)
    return folder


@pytest.mark.parametrize("form", ["folder", "zip"])
def test_an_intact_bundle_exits_0(
    tmp_path: Path, form: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = bundle(tmp_path)
    target = folder if form == "folder" else folder.with_suffix(".zip")
    assert main(["export", "--verify", str(target)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["intact"] is True and out["n_files"] == 4  # a.txt, b.csv, VERIFY.md, SHA256SUMS


def test_a_tampered_bundle_exits_5_listing_each_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = bundle(tmp_path)
    (folder / "a.txt").write_text("edited")
    (folder / "risk" / "b.csv").unlink()
    (folder / "new.txt").write_text("added")
    assert main(["export", "--verify", str(folder)]) == 5
    err = capsys.readouterr().err
    assert "3 problem(s)" in err
    for line in ("  - a.txt: sha256 differs from the manifest (tampered)",
                 "  - risk/b.csv: missing", "  - new.txt: not listed in the manifest"):  # fmt: skip
        assert line in err


def test_a_corrupt_or_absent_manifest_exits_1_with_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = bundle(tmp_path)
    (folder / "manifest.json").write_text("{oops")
    assert main(["export", "--verify", str(folder)]) == 1
    assert "manifest.json is not valid JSON (corrupt)" in capsys.readouterr().err
    (folder / "manifest.json").unlink()
    assert main(["export", "--verify", str(folder)]) == 1
    assert "no manifest" in capsys.readouterr().err
    assert main(["export", "--verify", str(tmp_path / "nowhere.zip")]) == 1
    assert "no such bundle" in capsys.readouterr().err
