from __future__ import annotations

import hashlib
import json
import os
import random
import re
import stat
import struct
import subprocess
import warnings
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from components.core.atomic import FOLDER_MARK
from components.core.errors import InputError, LeakageDetected
from components.export.bundle import CHECKSUMS, build_bundle, read_manifest, verify_bundle


def sources(tmp_path: Path) -> dict[str, Path | bytes]:
    (tmp_path / "a.json").write_text('{"x": 1}')
    (tmp_path / "b.csv").write_text("id,score\nc1,0\n")
    return {
        "metrics/a.json": tmp_path / "a.json",
        "risk/b.csv": tmp_path / "b.csv",
        "report.html": b"<html>generated</html>",
    }


def built(tmp_path: Path) -> Path:
    bundle = tmp_path / "out" / "bundle"
    build_bundle(sources(tmp_path), {"git_commit": "abc"}, bundle_dir=bundle, make_zip=True)
    return bundle


def rezip(folder: Path, zip_path: Path) -> Path:
    """The folder zipped again, as a tampered copy of the bundle's zip (which, like the
    export's, leaves out the folder's marker)."""
    zip_path.unlink(missing_ok=True)
    with zipfile.ZipFile(zip_path, "w") as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            if path.relative_to(folder).as_posix() != FOLDER_MARK:
                archive.write(path, path.relative_to(folder).as_posix())
    return zip_path


def test_the_folders_marker_is_no_part_of_the_bundle(tmp_path: Path) -> None:
    """Export replaces only an earlier bundle (its folder's marker); the marker is in no
    zip and no manifest, and anything else in its place is an unlisted file."""
    bundle = built(tmp_path)
    assert (bundle / FOLDER_MARK).read_text() == "bundle\n"
    with zipfile.ZipFile(bundle.with_suffix(".zip")) as archive:
        assert FOLDER_MARK not in archive.namelist()
    assert verify_bundle(bundle) == []
    (bundle / FOLDER_MARK).write_text("<html>a forged page</html>")
    assert verify_bundle(bundle) == [f"{FOLDER_MARK}: not listed in the manifest"]
    with pytest.raises(InputError, match="veiltune did not write it"):
        build_bundle(sources(tmp_path), {}, bundle_dir=tmp_path, make_zip=True)  # its inputs


def test_round_trip_folder_and_zip_verify_intact(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    manifest = read_manifest(bundle)
    assert set(manifest["files"]) == {
        "metrics/a.json",
        "risk/b.csv",
        "report.html",
        "VERIFY.md",
        CHECKSUMS,
    }
    assert manifest["git_commit"] == "abc"
    expected = hashlib.sha256(b"<html>generated</html>").hexdigest()
    assert manifest["files"]["report.html"] == expected
    assert verify_bundle(bundle) == []
    assert verify_bundle(bundle.with_suffix(".zip")) == []
    with zipfile.ZipFile(bundle.with_suffix(".zip")) as archive:
        assert sorted(archive.namelist()) == sorted([*manifest["files"], "manifest.json"])


def test_the_manifest_hash_can_be_checked_without_veiltune(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    check = subprocess.run(
        ["sha256sum", "-c", CHECKSUMS], cwd=bundle, capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr
    manifest = json.loads((bundle / "manifest.json").read_text())
    claimed = manifest.pop("manifest_sha256")
    assert claimed == hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()
    assert "sha256sum -c SHA256SUMS" in (bundle / "VERIFY.md").read_text()


def tamper_edit(bundle: Path) -> str:
    (bundle / "risk" / "b.csv").write_text("id,score\nc1,9\n")
    return "risk/b.csv: sha256 differs from the manifest (tampered)"


def tamper_remove(bundle: Path) -> str:
    (bundle / "metrics" / "a.json").unlink()
    return "metrics/a.json: missing"


def tamper_add(bundle: Path) -> str:
    (bundle / "risk" / "extra.txt").write_text("?")
    return "risk/extra.txt: not listed in the manifest"


def tamper_manifest(bundle: Path) -> str:
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["git_commit"] = "forged"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return "manifest.json: its own hash does not match (the manifest was edited)"


def tamper_file_and_its_listed_hash(bundle: Path) -> str:
    """Editing a file and its hash in the manifest still breaks the manifest's own hash."""
    (bundle / "report.html").write_bytes(b"<html>forged</html>")
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["files"]["report.html"] = hashlib.sha256(b"<html>forged</html>").hexdigest()
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return "manifest.json: its own hash does not match (the manifest was edited)"


TAMPERINGS = [
    tamper_edit,
    tamper_remove,
    tamper_add,
    tamper_manifest,
    tamper_file_and_its_listed_hash,
]


@pytest.mark.parametrize("tamper", TAMPERINGS)
@pytest.mark.parametrize("form", ["folder", "zip"])
def test_tampering_is_reported(tmp_path: Path, tamper: Callable[[Path], str], *, form: str) -> None:
    bundle = built(tmp_path)
    expected = tamper(bundle)
    target = bundle if form == "folder" else rezip(bundle, tmp_path / "tampered.zip")
    problems = verify_bundle(target)
    assert expected in problems
    assert len(problems) == 1, problems


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    expected = {tamper(bundle) for tamper in (tamper_edit, tamper_remove, tamper_add)}
    assert set(verify_bundle(bundle)) == expected


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (lambda b: (b / "manifest.json").unlink(), "no manifest"),
        (lambda b: (b / "manifest.json").write_text("{not json"), "not valid JSON"),
        (lambda b: (b / "manifest.json").write_bytes(b"\xff\xfe"), "not UTF-8"),
        (lambda b: (b / "manifest.json").write_text('{"files": []}'), "no 'files' mapping"),
    ],
)
@pytest.mark.parametrize("form", ["folder", "zip"])
def test_absent_or_corrupt_manifest_is_a_clear_error(
    tmp_path: Path, corrupt: Callable[[Path], object], *, message: str, form: str
) -> None:
    bundle = built(tmp_path)
    corrupt(bundle)
    target = bundle if form == "folder" else rezip(bundle, tmp_path / "corrupt.zip")
    with pytest.raises(InputError, match=message):
        verify_bundle(target)


def test_not_a_bundle_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such bundle"):
        verify_bundle(tmp_path / "absent")
    (tmp_path / "broken.zip").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(InputError, match="not a readable zip"):
        verify_bundle(tmp_path / "broken.zip")


def test_missing_input_leaves_no_bundle(tmp_path: Path) -> None:
    files = sources(tmp_path)
    files["gone.json"] = tmp_path / "gone.json"
    bundle = tmp_path / "bundle"
    with pytest.raises(InputError, match="gone.json"):
        build_bundle(files, {}, bundle_dir=bundle, make_zip=True)
    assert not bundle.exists() and not bundle.with_suffix(".zip").exists()


def test_a_failing_check_keeps_the_previous_bundle_whole(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    before = read_manifest(bundle)["manifest_sha256"]
    zip_before = bundle.with_suffix(".zip").read_bytes()

    def refuse(folder: Path) -> None:
        assert (folder / "manifest.json").is_file()  # it sees the finished bundle
        raise LeakageDetected("planted")

    files = {**sources(tmp_path), "report.html": b"<html>new</html>"}
    with pytest.raises(LeakageDetected):
        build_bundle(files, {"git_commit": "new"}, bundle_dir=bundle, make_zip=True, check=refuse)
    assert read_manifest(bundle)["manifest_sha256"] == before
    assert bundle.with_suffix(".zip").read_bytes() == zip_before
    assert verify_bundle(bundle) == []
    assert {p.name for p in bundle.parent.iterdir()} == {"bundle", "bundle.zip"}  # no leftovers


@pytest.mark.parametrize(
    "name",
    [
        "../escape.txt",
        "/abs.txt",
        "C:/win.txt",
        "C:win.txt",
        "a\\b.txt",
        "manifest.json",
        "SHA256SUMS",
    ],
)
def test_bundle_names_must_be_plain_and_unreserved(tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError, match="bundle name"):
        build_bundle({name: b"x"}, {}, bundle_dir=tmp_path / "bundle", make_zip=False)


# A hostile archive or folder: what ``--verify`` refuses rather than calls intact.


def sealed_manifest(files: Mapping[str, bytes]) -> bytes:
    """A manifest listing ``files`` that hashes itself, as a forger who rewrites it would."""
    manifest: dict[str, object] = {
        "format": "veiltune-bundle/1",
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }
    text = json.dumps(manifest, sort_keys=True)
    manifest["manifest_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    return json.dumps(manifest).encode()


def forge_zip(
    zip_path: Path, entries: list[tuple[str | zipfile.ZipInfo, bytes]], *, manifest: bytes | None
) -> Path:
    """A zip of ``entries`` in order, then ``manifest`` (by default one sealing the entries)."""
    listed = {(e if isinstance(e, str) else e.filename): data for e, data in entries}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate names we plant
        with zipfile.ZipFile(zip_path, "w") as archive:
            for entry, data in entries:
                archive.writestr(entry, data)
            archive.writestr("manifest.json", manifest or sealed_manifest(listed))
    return zip_path


def bundle_entries(bundle: Path) -> list[tuple[str | zipfile.ZipInfo, bytes]]:
    """The files of a built bundle folder, manifest aside, as zip entries."""
    skipped = ("manifest.json", FOLDER_MARK)
    files = sorted(p for p in bundle.rglob("*") if p.is_file() and p.name not in skipped)
    return [(p.relative_to(bundle).as_posix(), p.read_bytes()) for p in files]


def reseal(folder: Path, extra: Mapping[str, bytes]) -> None:
    """Rewrite the folder's manifest so that it also lists ``extra`` and still hashes itself."""
    names = json.loads((folder / "manifest.json").read_text())["files"]
    files = {name: (folder / name).read_bytes() for name in names}
    (folder / "manifest.json").write_bytes(sealed_manifest({**files, **extra}))


def symlink_entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def test_a_forged_duplicate_member_placed_first_is_a_problem(tmp_path: Path) -> None:
    """``unzip -n`` extracts the first of two same-named members; zipfile reads the last."""
    bundle = built(tmp_path)
    forged = [("report.html", b"<html>forged</html>"), *bundle_entries(bundle)]
    zip_path = forge_zip(
        tmp_path / "dup.zip", forged, manifest=(bundle / "manifest.json").read_bytes()
    )
    assert verify_bundle(zip_path) == [
        "report.html: 2 entries with this name in the archive (refused)"
    ]


def test_a_duplicate_manifest_is_a_problem_and_neither_copy_is_trusted(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    entries = [("manifest.json", sealed_manifest({})), *bundle_entries(bundle)]
    zip_path = forge_zip(
        tmp_path / "dup.zip", entries, manifest=(bundle / "manifest.json").read_bytes()
    )
    problem = "manifest.json: 2 entries with this name in the archive (refused)"
    assert verify_bundle(zip_path) == [problem]
    with pytest.raises(InputError, match=re.escape(problem)):
        read_manifest(zip_path)


UNSAFE_NAMES = [
    "../escape.txt",
    "risk/../../escape.txt",
    "/etc/cron.d/x",
    "C:/win.txt",
    "C:win.txt",
    "risk\\b.csv",
    "\\\\server\\share\\x",
]


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_a_sealed_zip_entry_with_an_unsafe_name_is_a_problem(tmp_path: Path, name: str) -> None:
    bundle = built(tmp_path)
    zip_path = forge_zip(tmp_path / "f.zip", [*bundle_entries(bundle), (name, b"x")], manifest=None)
    assert verify_bundle(zip_path) == [f"{name}: not a plain relative path (refused)"]


def test_a_sealed_zip_symlink_entry_is_a_problem(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    entries = [*bundle_entries(bundle), (symlink_entry("risk/link.csv"), b"/etc/passwd")]
    zip_path = forge_zip(tmp_path / "f.zip", entries, manifest=None)
    assert verify_bundle(zip_path) == ["risk/link.csv: a symbolic link (refused)"]


def test_a_zip_symlink_manifest_is_a_problem_and_nothing_else_is_compared(
    tmp_path: Path,
) -> None:
    entries = [*bundle_entries(built(tmp_path)), (symlink_entry("manifest.json"), b"/tmp/m.json")]
    with zipfile.ZipFile(tmp_path / "link.zip", "w") as archive:
        for entry, data in entries:
            archive.writestr(entry, data)
    assert verify_bundle(tmp_path / "link.zip") == ["manifest.json: a symbolic link (refused)"]
    with pytest.raises(InputError, match="manifest.json: a symbolic link"):
        read_manifest(tmp_path / "link.zip")


def plant_file_symlink(bundle: Path, tmp_path: Path) -> list[str]:
    (tmp_path / "outside.csv").write_text("id,score\nc1,0\n")
    (bundle / "risk" / "link.csv").symlink_to(tmp_path / "outside.csv")
    reseal(bundle, {"risk/link.csv": b"id,score\nc1,0\n"})
    return ["risk/link.csv: a symbolic link (refused)"]


def plant_dir_symlink(bundle: Path, tmp_path: Path) -> list[str]:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.txt").write_text("x")
    (bundle / "evidence").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    reseal(bundle, {"evidence/x.txt": b"x"})
    return ["evidence: a symbolic link (refused)", "evidence/x.txt: missing"]


def plant_dangling_symlink(bundle: Path, tmp_path: Path) -> list[str]:
    (bundle / "gone.txt").symlink_to(tmp_path / "nowhere.txt")
    return ["gone.txt: a symbolic link (refused)"]


def plant_manifest_symlink(bundle: Path, tmp_path: Path) -> list[str]:
    """Nothing else is compared: there is no manifest to trust."""
    (bundle / "manifest.json").rename(tmp_path / "manifest.json")
    (bundle / "manifest.json").symlink_to(tmp_path / "manifest.json")
    return ["manifest.json: a symbolic link (refused)"]


@pytest.mark.parametrize(
    "plant",
    [plant_file_symlink, plant_dir_symlink, plant_dangling_symlink, plant_manifest_symlink],
)
def test_a_symlink_in_the_bundle_folder_is_a_problem_and_never_followed(
    tmp_path: Path, plant: Callable[[Path, Path], list[str]], *, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = built(tmp_path)
    expected = plant(bundle, tmp_path)
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: str | os.PathLike[str], flags: int, *args: int) -> int:
        opened.append(os.fspath(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", recording_open)
    assert verify_bundle(bundle) == expected
    assert opened  # the files it hashed, each opened without following a link
    for path in opened:
        assert not Path(path).is_symlink(), path
        assert Path(os.path.realpath(path)).is_relative_to(bundle.resolve()), path


def test_a_fifo_in_the_bundle_folder_is_a_problem(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    os.mkfifo(bundle / "risk" / "pipe")
    assert verify_bundle(bundle) == ["risk/pipe: not a regular file (refused)"]


def test_a_sealed_folder_file_with_a_backslash_name_is_a_problem(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    (bundle / "risk\\b.csv").write_text("x")
    reseal(bundle, {"risk\\b.csv": b"x"})
    assert verify_bundle(bundle) == ["risk\\b.csv: not a plain relative path (refused)"]


def oversized_manifest() -> bytes:
    """A valid manifest a little over the cap (a real one is a few KB)."""
    padding = "a" * (16 * 2**20 + 1)
    return json.dumps({"files": {}, "padding": padding}).encode()


@pytest.mark.parametrize("form", ["folder", "zip"])
def test_an_oversized_manifest_is_refused_before_parsing(tmp_path: Path, form: str) -> None:
    bundle = built(tmp_path)
    (bundle / "manifest.json").write_bytes(oversized_manifest())
    target = bundle if form == "folder" else rezip(bundle, tmp_path / "big.zip")
    with pytest.raises(InputError, match=r"manifest.json: larger than 16 MiB"):
        verify_bundle(target)


def test_a_manifest_whose_header_claims_2_gib_is_refused_before_reading(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    zip_path = patch_member(rezip(bundle, tmp_path / "lie.zip"), "manifest.json", size=2**31)
    with pytest.raises(InputError, match=r"lie.zip: manifest.json: larger than 16 MiB"):
        verify_bundle(zip_path)


DEEP = ("[" * 100_000 + "]" * 100_000).encode()
JUST_TOO_DEEP = b'{"files": {}, "x": ' + b"[" * 64 + b"]" * 64 + b"}"


@pytest.mark.parametrize("manifest", [DEEP, JUST_TOO_DEEP], ids=["100000", "65"])
@pytest.mark.parametrize("form", ["folder", "zip"])
def test_a_deeply_nested_manifest_is_one_clear_error(
    tmp_path: Path, manifest: bytes, *, form: str
) -> None:
    bundle = built(tmp_path)
    (bundle / "manifest.json").write_bytes(manifest)
    target = bundle if form == "folder" else rezip(bundle, tmp_path / "deep.zip")
    with pytest.raises(InputError, match=r"manifest.json: nested deeper than 64 levels"):
        verify_bundle(target)


@pytest.mark.parametrize(
    "manifest",
    [
        b'{"files": {}, "x": ' + b"[" * 63 + b"]" * 63 + b"}",
        b'{"files": {}, "x": "' + b"[" * 1000 + b'\\"{{{{{"}',
    ],
    ids=["64 levels", "brackets in a string"],
)
def test_nesting_up_to_the_limit_is_parsed(tmp_path: Path, manifest: bytes) -> None:
    bundle = built(tmp_path)
    (bundle / "manifest.json").write_bytes(manifest)
    assert "manifest.json: its own hash does not match (the manifest was edited)" in (
        verify_bundle(bundle)
    )


def _central_and_local_offsets(data: bytes, name: str) -> tuple[int, int]:
    """Where ``name``'s central directory record and local header start in a zip's bytes."""
    start = data.index(b"PK\x01\x02")
    while True:
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, start + 28)
        if data[start + 46 : start + 46 + name_len].decode() == name:
            return start, struct.unpack_from("<I", data, start + 42)[0]
        start += 46 + name_len + extra_len + comment_len


def patch_member(
    zip_path: Path,
    name: str,
    *,
    method: int | None = None,
    flags: int | None = None,
    size: int | None = None,
) -> Path:
    """Rewrite ``name``'s compression method, flag bits or file size in both of its headers."""
    data = bytearray(zip_path.read_bytes())
    central, local = _central_and_local_offsets(bytes(data), name)
    for field, value, central_at, local_at in (
        ("<H", method, 10, 8),
        ("<H", flags, 8, 6),
        ("<I", size, 24, 22),
    ):
        if value is not None:
            struct.pack_into(field, data, central + central_at, value)
            struct.pack_into(field, data, local + local_at, value)
    zip_path.write_bytes(bytes(data))
    return zip_path


@pytest.mark.parametrize("member", ["report.html", "manifest.json"])
@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"method": 99}, "compression method 99 is not supported (only stored or deflated)"),
        ({"method": zipfile.ZIP_LZMA}, "compression method 14 is not supported"),
        ({"flags": 0x1}, "encrypted; a bundle is never encrypted"),
        ({"flags": 0x41}, "encrypted; a bundle is never encrypted"),
    ],
    ids=["method-99", "lzma", "encrypted", "strong-encryption"],
)
def test_a_member_zipfile_cannot_read_is_one_clear_error(
    tmp_path: Path, member: str, *, patch: dict[str, int], message: str
) -> None:
    zip_path = patch_member(rezip(built(tmp_path), tmp_path / "odd.zip"), member, **patch)
    with pytest.raises(InputError, match=re.escape(f"{zip_path}: {member}: {message}")):
        verify_bundle(zip_path)


def test_a_member_shorter_than_its_declared_size_is_a_clear_error(tmp_path: Path) -> None:
    """A stored member whose header claims more bytes than it holds passes zipfile's CRC."""
    zip_path = rezip(built(tmp_path), tmp_path / "short.zip")
    patch_member(zip_path, "report.html", size=len(b"<html>generated</html>") + 10)
    with pytest.raises(InputError, match=r"short.zip: report.html: holds 22 bytes, declares 32"):
        verify_bundle(zip_path)


def test_a_corrupt_deflate_stream_is_a_clear_error(tmp_path: Path) -> None:
    zip_path = built(tmp_path).with_suffix(".zip")
    with zipfile.ZipFile(zip_path) as archive:
        info = archive.getinfo("report.html")
    data = bytearray(zip_path.read_bytes())
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    data[info.header_offset + 30 + name_len + extra_len] = 0xFF  # a reserved deflate block type
    zip_path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"bundle.zip: report.html: cannot be read"):
        verify_bundle(zip_path)


def test_random_corruption_gives_only_veiltune_errors(tmp_path: Path) -> None:
    zip_path = built(tmp_path).with_suffix(".zip")
    original = zip_path.read_bytes()
    rng = random.Random(0)
    for _ in range(300):
        data = bytearray(original)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        zip_path.write_bytes(bytes(data))
        try:
            verify_bundle(zip_path)
        except InputError:
            continue


# Bytes outside the archive's members, directory and end records: zipfile reads the zip from
# its end and skips them; a reader that streams it from its first byte takes them for members.


def forged_page(tmp_path: Path) -> bytes:
    """A zip of one forged report, as a forger would prepend it or slip it in."""
    forged = forge_zip(
        tmp_path / "forged.zip", [("report.html", b"<html>forged</html>")], manifest=b"{}"
    )
    return forged.read_bytes()


def prepend(zip_path: Path, tmp_path: Path) -> Path:
    """``cat forged.zip bundle.zip > x.zip``"""
    target = tmp_path / "x.zip"
    target.write_bytes(forged_page(tmp_path) + zip_path.read_bytes())
    return target


def prepend_and_shift_offsets(zip_path: Path, tmp_path: Path) -> Path:
    """The same bytes prepended, the bundle's recorded offsets moved past them (``zip -A``),
    so that the central directory agrees with where each member now lies."""
    prefix = forged_page(tmp_path)
    target = tmp_path / "x.zip"
    with zipfile.ZipFile(zip_path) as source, target.open("wb") as raw:
        raw.write(prefix)
        with zipfile.ZipFile(raw, "w") as archive:  # records offsets from the file's start
            for info in source.infolist():
                archive.writestr(info, source.read(info))
    return target


def slip_between_members(zip_path: Path, tmp_path: Path) -> Path:
    """A forged member's bytes between two of the bundle's, every offset recorded right."""
    hidden = forged_page(tmp_path)
    target = tmp_path / "x.zip"
    with zipfile.ZipFile(zip_path) as source, zipfile.ZipFile(target, "w") as archive:
        for i, info in enumerate(source.infolist()):
            archive.writestr(info, source.read(info))
            if i == 0:
                archive.fp.write(hidden)  # type: ignore[union-attr]
                archive.start_dir = archive.fp.tell()  # type: ignore[union-attr]
    return target


def append(zip_path: Path, tmp_path: Path) -> Path:
    target = tmp_path / "x.zip"
    target.write_bytes(zip_path.read_bytes() + b"<html>after the end</html>")
    return target


@pytest.mark.parametrize(
    ("forge", "problem"),
    [
        (prepend, r"the archive: \d+ bytes before the first member \(refused: a reader that "),
        (prepend_and_shift_offsets, r"the archive: \d+ bytes before the first member"),
        (slip_between_members, r"the archive: \d+ bytes between members '[^']+' and '[^']+'"),
        (append, r"the archive: 26 bytes after its end \(refused: no exporter writes them\)"),
    ],
    ids=lambda v: v.__name__ if callable(v) else None,
)
def test_bytes_outside_the_archive_are_a_problem(
    tmp_path: Path, forge: Callable[[Path, Path], Path], *, problem: str
) -> None:
    target = forge(built(tmp_path).with_suffix(".zip"), tmp_path)
    assert read_manifest(target)["git_commit"] == "abc"  # zipfile reads it as the bundle
    [found] = verify_bundle(target)
    assert re.fullmatch(problem + ".*", found), found


class _Stream:
    """A file that cannot seek: zipfile writes each member's sizes after it, in a data
    descriptor, as zip tools writing to a pipe do."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("wb")

    def write(self, data: bytes) -> int:
        return self._file.write(data)

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()


@pytest.mark.parametrize("zip64", [False, True])
def test_a_zip_written_as_a_stream_with_data_descriptors_is_intact(
    tmp_path: Path, zip64: bool
) -> None:
    bundle = built(tmp_path)
    target = tmp_path / "streamed.zip"
    stream = _Stream(target)
    with zipfile.ZipFile(stream, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(path.relative_to(bundle).as_posix())
            with archive.open(info, "w", force_zip64=zip64) as member:
                member.write(path.read_bytes())
    stream.close()
    with zipfile.ZipFile(target) as archive:
        assert all(info.flag_bits & 0x08 for info in archive.infolist())
    assert verify_bundle(target) == []


def test_the_stage_always_writes_the_zip_that_dvc_yaml_declares(tmp_path: Path) -> None:
    """``export.make_zip: false`` left ``exports/bundle.zip`` unwritten, and DVC fails a stage
    whose declared output is missing: the key is gone, and naming it is one clear error."""
    from components.core.errors import ParamsError
    from components.stages import BY_NAME, stage_context

    assert "exports/bundle.zip" in {a.path for a in BY_NAME["export"].outs}
    params = tmp_path / "params.yaml"
    params.write_text("export:\n  make_zip: false\n", encoding="utf-8")
    with pytest.raises(ParamsError, match=r"unknown key 'export.make_zip'"):
        stage_context(params)
