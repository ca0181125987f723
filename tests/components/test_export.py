from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from components.errors import InputError
from components.export import build_bundle, verify_bundle


def sources(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "a.json").write_text('{"x": 1}')
    (tmp_path / "b.csv").write_text("id,score\nc1,0\n")
    return {"metrics/a.json": tmp_path / "a.json", "risk/b.csv": tmp_path / "b.csv"}


def test_bundle_manifest_hashes_and_zip(tmp_path: Path) -> None:
    bundle = tmp_path / "out" / "bundle"
    manifest = build_bundle(sources(tmp_path), {"git_commit": "abc"}, bundle, make_zip=True)
    assert set(manifest["files"]) == {"metrics/a.json", "risk/b.csv"}
    assert json.loads((bundle / "manifest.json").read_text())["manifest_sha256"]
    assert verify_bundle(bundle) == []
    with zipfile.ZipFile(bundle.with_suffix(".zip")) as archive:
        names = sorted(n for n in archive.namelist() if not n.endswith("/"))
        assert names == ["manifest.json", "metrics/a.json", "risk/b.csv"]


def test_verify_reports_tampered_missing_and_extra_files(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    build_bundle(sources(tmp_path), {}, bundle, make_zip=False)
    (bundle / "risk" / "b.csv").write_text("id,score\nc1,9\n")
    (bundle / "metrics" / "a.json").unlink()
    (bundle / "extra.txt").write_text("?")
    problems = verify_bundle(bundle)
    assert any(p.startswith("risk/b.csv: sha256 differs") for p in problems)
    assert "metrics/a.json: missing" in problems
    assert "extra.txt: not listed in the manifest" in problems


def test_edited_manifest_is_detected(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    build_bundle(sources(tmp_path), {"git_commit": "abc"}, bundle, make_zip=False)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["git_commit"] = "forged"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert any("its own hash does not match" in p for p in verify_bundle(bundle))


def test_missing_input_leaves_no_bundle(tmp_path: Path) -> None:
    files = sources(tmp_path)
    files["gone.json"] = tmp_path / "gone.json"
    bundle = tmp_path / "bundle"
    with pytest.raises(InputError, match="gone.json"):
        build_bundle(files, {}, bundle, make_zip=True)
    assert not bundle.exists() and not bundle.with_suffix(".zip").exists()
