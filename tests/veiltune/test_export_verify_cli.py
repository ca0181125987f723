"""`veiltune export --verify BUNDLE`: exit 0 when intact, the list of problems otherwise.

The bundles are signed, and checked with the producer's public key (``--public-key``), as an
auditor outside the checkout does; tests/export/test_signing.py tests the signature itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from components.export.bundle import build_bundle
from components.export.signing import public_key_pem
from tests.export.test_bundle import (
    DEEP,
    bundle_entries,
    forge_zip,
    patch_member,
    rezip,
    symlink_entry,
)
from veiltune.cli import main


def bundle(tmp_path: Path) -> Path:
    """A signed bundle; the producer's public key is ``tmp_path/producer.pem``."""
    key = Ed25519PrivateKey.generate()
    (tmp_path / "producer.pem").write_bytes(public_key_pem(key.public_key()))
    folder = tmp_path / "exports" / "bundle"
    contents: dict[str, Path | bytes] = {"a.txt": b"a", "risk/b.csv": b"id\n"}
    build_bundle(contents, {"git_commit": "c"}, bundle_dir=folder, make_zip=True, signing_key=key)
    return folder


def verify(target: Path, tmp_path: Path) -> int:
    """``veiltune export --verify TARGET`` with the producer's public key."""
    return main(["export", "--verify", str(target), "--public-key", str(tmp_path / "producer.pem")])


@pytest.mark.parametrize("form", ["folder", "zip"])
def test_an_intact_bundle_exits_0(
    tmp_path: Path, form: str, *, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = bundle(tmp_path)
    target = folder if form == "folder" else folder.with_suffix(".zip")
    assert verify(target, tmp_path) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["intact"] is True and out["signed"] is True
    assert out["n_files"] == 5  # a.txt, b.csv, VERIFY.md, SHA256SUMS, the public key


def test_a_tampered_bundle_exits_5_listing_each_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = bundle(tmp_path)
    (folder / "a.txt").write_text("edited")
    (folder / "risk" / "b.csv").unlink()
    (folder / "new.txt").write_text("added")
    assert verify(folder, tmp_path) == 5
    err = capsys.readouterr().err
    assert "3 problem(s)" in err
    for line in (
        "  - a.txt: sha256 differs from the manifest (tampered)",
        "  - risk/b.csv: missing",
        "  - new.txt: not listed in the manifest",
    ):
        assert line in err


def test_a_corrupt_or_absent_manifest_exits_1_with_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = bundle(tmp_path)
    (folder / "manifest.json").write_text("{oops")
    assert verify(folder, tmp_path) == 1
    assert "manifest.json is not valid JSON (corrupt)" in capsys.readouterr().err
    (folder / "manifest.json").unlink()
    assert verify(folder, tmp_path) == 1
    assert "no manifest" in capsys.readouterr().err
    assert verify(tmp_path / "nowhere.zip", tmp_path) == 1
    assert "no such bundle" in capsys.readouterr().err


def _duplicate_member(folder: Path, tmp_path: Path) -> Path:
    """A forged a.txt placed before the real one, the manifest untouched."""
    entries = [("a.txt", b"forged"), *bundle_entries(folder)]
    return forge_zip(tmp_path / "f.zip", entries, manifest=(folder / "manifest.json").read_bytes())


def _prepended_page(folder: Path, tmp_path: Path) -> Path:
    """``cat forged.zip bundle.zip > f.zip``: a streaming reader sees the forged page first."""
    forged = forge_zip(tmp_path / "forged.zip", [("a.txt", b"forged")], manifest=b"{}")
    target = tmp_path / "f.zip"
    target.write_bytes(forged.read_bytes() + folder.with_suffix(".zip").read_bytes())
    return target


def _symlink_member(folder: Path, tmp_path: Path) -> Path:
    entries = [*bundle_entries(folder), (symlink_entry("risk/link"), b"/etc/passwd")]
    return forge_zip(tmp_path / "f.zip", entries, manifest=None)


def _unsafe_member(folder: Path, tmp_path: Path) -> Path:
    return forge_zip(
        tmp_path / "f.zip", [*bundle_entries(folder), ("../escape", b"x")], manifest=None
    )


def _symlink_in_folder(folder: Path, tmp_path: Path) -> Path:
    (folder / "risk" / "link").symlink_to(tmp_path)
    return folder


def _unsupported_method(folder: Path, tmp_path: Path) -> Path:
    return patch_member(rezip(folder, tmp_path / "f.zip"), "a.txt", method=99)


def _encrypted(folder: Path, tmp_path: Path) -> Path:
    return patch_member(rezip(folder, tmp_path / "f.zip"), "manifest.json", flags=0x1)


def _deep_manifest(folder: Path, tmp_path: Path) -> Path:
    (folder / "manifest.json").write_bytes(DEEP)
    return rezip(folder, tmp_path / "f.zip")


def _oversized_manifest(folder: Path, tmp_path: Path) -> Path:
    return patch_member(rezip(folder, tmp_path / "f.zip"), "manifest.json", size=2**31)


def _short_member(folder: Path, tmp_path: Path) -> Path:
    return patch_member(rezip(folder, tmp_path / "f.zip"), "a.txt", size=100)


@pytest.mark.parametrize(
    ("forge", "code", "message"),
    [
        (_prepended_page, 5, "bytes before the first member (refused: a reader that streams"),
        (_duplicate_member, 5, "  - a.txt: 2 entries with this name in the archive (refused)"),
        (_symlink_member, 5, "  - risk/link: a symbolic link (refused)"),
        (_unsafe_member, 5, "  - ../escape: not a plain relative path (refused)"),
        (_symlink_in_folder, 5, "  - risk/link: a symbolic link (refused)"),
        (_unsupported_method, 1, "a.txt: compression method 99 is not supported"),
        (_encrypted, 1, "manifest.json: encrypted; a bundle is never encrypted"),
        (_deep_manifest, 1, "manifest.json: nested deeper than 64 levels"),
        (_oversized_manifest, 1, "manifest.json: larger than 16 MiB"),
        (_short_member, 1, "a.txt: holds 1 bytes, declares 100 (corrupt)"),
    ],
    ids=lambda v: v.__name__.strip("_") if callable(v) else None,
)
def test_a_malicious_bundle_exits_non_zero_with_a_message_not_a_traceback(
    tmp_path: Path,
    forge: Callable[[Path, Path], Path],
    *,
    code: int,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = forge(bundle(tmp_path), tmp_path)
    assert verify(target, tmp_path) == code
    err = capsys.readouterr().err
    assert err.startswith(f"veiltune export: error: {target}: "), err
    assert message in err and "Traceback" not in err
    if code == 1:
        assert len(err.splitlines()) == 1, err
