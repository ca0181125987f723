from __future__ import annotations

import hashlib
import json
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from components.errors import InputError, LeakageDetected
from components.export import CHECKSUMS, build_bundle, read_manifest, verify_bundle


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
    build_bundle(sources(tmp_path), {"git_commit": "abc"}, bundle, make_zip=True)
    return bundle


def rezip(folder: Path, zip_path: Path) -> Path:
    """The folder zipped again, as a tampered copy of the bundle's zip."""
    zip_path.unlink(missing_ok=True)
    with zipfile.ZipFile(zip_path, "w") as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.write(path, path.relative_to(folder).as_posix())
    return zip_path


def test_round_trip_folder_and_zip_verify_intact(tmp_path: Path) -> None:
    bundle = built(tmp_path)
    manifest = read_manifest(bundle)
    assert set(manifest["files"]) == {
        "metrics/a.json", "risk/b.csv", "report.html", "VERIFY.md", CHECKSUMS,
    }  # fmt: skip
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


TAMPERINGS = [tamper_edit, tamper_remove, tamper_add, tamper_manifest,
              tamper_file_and_its_listed_hash]  # fmt: skip


@pytest.mark.parametrize("tamper", TAMPERINGS)
@pytest.mark.parametrize("form", ["folder", "zip"])
def test_tampering_is_reported(tmp_path: Path, tamper: Callable[[Path], str], form: str) -> None:
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
    tmp_path: Path, corrupt: Callable[[Path], object], message: str, form: str
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
        build_bundle(files, {}, bundle, make_zip=True)
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
        build_bundle(files, {"git_commit": "new"}, bundle, make_zip=True, check=refuse)
    assert read_manifest(bundle)["manifest_sha256"] == before
    assert bundle.with_suffix(".zip").read_bytes() == zip_before
    assert verify_bundle(bundle) == []
    assert {p.name for p in bundle.parent.iterdir()} == {"bundle", "bundle.zip"}  # no leftovers


@pytest.mark.parametrize("name", ["../escape.txt", "/abs.txt", "manifest.json", "SHA256SUMS"])
def test_bundle_names_must_be_plain_and_unreserved(tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError, match="bundle name"):
        build_bundle({name: b"x"}, {}, tmp_path / "bundle", make_zip=False)
