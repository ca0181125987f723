"""The bundle's signature: made with the producer's key, checked with a key the verifier
trusts (never the bundle's own copy), recorded on the registered model version."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import zipfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from components.core import paths
from components.core.atomic import FOLDER_MARK
from components.core.errors import InputError, ParamsError
from components.core.lineage import sha256_text
from components.core.signing import checkout_public_key
from components.export.bundle import (
    CHECKSUMS,
    build_bundle,
    created_at,
    read_manifest,
    verify_bundle,
)
from components.export.registry_record import (
    ARTIFACT_PATH,
    MANIFEST_TAG,
    RUN_TAG,
    SIGNATURE_TAG,
    record_bundle,
    registry_problems,
)
from components.export.signing import (
    KEY_ENV,
    PUBLIC_KEY,
    SIGNATURE,
    fingerprint,
    public_key_pem,
    signing_key,
)
from components.export.verify import read_signature
from veiltune.cli import main

KEY_PARAM = str(paths.SIGNING_KEY)  # .veiltune/keys/signing_key.pem
REGISTERED = {"model_name": "veiltune-adapter", "model_version": "1"}


@pytest.fixture(autouse=True)
def no_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


def producer_key(checkout: Path) -> Ed25519PrivateKey:
    return signing_key(KEY_PARAM, checkout)


def build_signed(root: Path, key: Ed25519PrivateKey | None) -> Path:
    (root / "inputs").mkdir(parents=True, exist_ok=True)
    (root / "inputs" / "b.csv").write_text("id,score\nc1,0\n")
    contents: dict[str, Path | bytes] = {
        "risk/b.csv": root / "inputs" / "b.csv",
        "report.html": b"<html>generated</html>",
    }
    bundle = root / "exports" / "bundle"
    lineage = {"git_commit": "abc", "registered_model": REGISTERED}
    build_bundle(contents, lineage, bundle_dir=bundle, make_zip=True, signing_key=key)
    return bundle


def write_public_key(key: Ed25519PrivateKey, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(public_key_pem(key.public_key()))
    return path


def rehash(bundle: Path, edits: dict[str, bytes], *, signing: dict[str, str] | None = None) -> None:
    """What a forger does: write ``edits``, then recompute SHA256SUMS, every hash in the
    manifest and the manifest's own hash (``signing`` replaces the key it names)."""
    for name, data in edits.items():
        (bundle / name).write_bytes(data)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest.pop("manifest_sha256")
    digest = {n: hashlib.sha256((bundle / n).read_bytes()).hexdigest() for n in manifest["files"]}
    sums = "".join(f"{digest[n]}  {n}\n" for n in sorted(digest) if n != CHECKSUMS)
    (bundle / CHECKSUMS).write_text(sums)
    digest[CHECKSUMS] = hashlib.sha256(sums.encode()).hexdigest()
    manifest["files"] = digest
    if signing is not None:
        manifest["signing"].update(signing)
    manifest["manifest_sha256"] = sha256_text(json.dumps(manifest, sort_keys=True))
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def sign_as(bundle: Path, key: Ed25519PrivateKey) -> None:
    signature = key.sign((bundle / "manifest.json").read_bytes())
    (bundle / SIGNATURE).write_text(base64.b64encode(signature).decode() + "\n")


@pytest.fixture
def auditor(tmp_path: Path) -> Path:
    """A folder outside any checkout: no params.yaml, no key pair."""
    folder = tmp_path / "auditor"
    folder.mkdir()
    return folder


def run_verify(  # noqa: PLR0917 (the command's options follow, as it takes them)
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cwd: Path,
    bundle: Path,
    *options: str,
) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    code = main(["export", "--verify", str(bundle), *options])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_key_is_made_once_private_and_reused(tmp_path: Path) -> None:
    key = producer_key(tmp_path)
    path = tmp_path / KEY_PARAM
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert b"BEGIN PRIVATE KEY" in path.read_bytes()
    again = producer_key(tmp_path)
    assert fingerprint(again.public_key()) == fingerprint(key.public_key())
    assert sorted(p.name for p in path.parent.iterdir()) == ["signing_key.pem"]  # no temp left


def test_a_key_named_by_the_environment_must_exist_and_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = producer_key(tmp_path / "elsewhere")
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "elsewhere" / KEY_PARAM))
    assert fingerprint(producer_key(tmp_path).public_key()) == fingerprint(mine.public_key())
    assert not (tmp_path / KEY_PARAM).exists()
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "missing.pem"))
    with pytest.raises(InputError, match="missing.pem: cannot read the signing key"):
        producer_key(tmp_path)


@pytest.mark.parametrize("place", ["exports/key.pem", "data/raw/signing_key.pem", "data/k.pem"])
def test_a_key_inside_an_output_or_the_raw_data_is_refused(tmp_path: Path, place: str) -> None:
    folder = place.split("/")[0]
    with pytest.raises(ParamsError, match=f"export.signing_key: .* lies in {folder}/"):
        signing_key(place, tmp_path)
    assert not (tmp_path / folder).exists()


def test_a_key_left_in_the_raw_data_by_an_earlier_release_is_moved_out_first_use(
    tmp_path: Path,
) -> None:
    legacy = tmp_path / paths.LEGACY_SIGNING_KEY
    mine = producer_key(tmp_path / "earlier")
    legacy.parent.mkdir(parents=True)
    os.replace(tmp_path / "earlier" / KEY_PARAM, legacy)
    public = checkout_public_key(KEY_PARAM, tmp_path)
    assert public is not None and fingerprint(public) == fingerprint(mine.public_key())
    assert not legacy.exists()
    moved = tmp_path / KEY_PARAM
    assert stat.S_IMODE(moved.stat().st_mode) == 0o600
    assert stat.S_IMODE(moved.parent.stat().st_mode) == 0o700
    assert fingerprint(producer_key(tmp_path).public_key()) == fingerprint(mine.public_key())


def test_a_good_bundle_verifies_with_the_public_key_alone(
    tmp_path: Path,
    auditor: Path,
    *,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = producer_key(tmp_path)
    bundle = build_signed(tmp_path, key)
    manifest = read_manifest(bundle)
    assert manifest["signing"]["public_key_sha256"] == fingerprint(key.public_key())
    assert (bundle / PUBLIC_KEY).read_bytes() == public_key_pem(key.public_key())
    public = write_public_key(key, auditor / "producer.pem")
    for target in (bundle, bundle.with_suffix(".zip")):
        code, out, err = run_verify(
            capsys, monkeypatch, auditor, target, "--public-key", str(public)
        )
        assert code == 0, err
        result = json.loads(out)
        assert result["signed"] is True and result["intact"] is True
        assert result["public_key_sha256"] == fingerprint(key.public_key())


def test_a_forged_rehash_fails_naming_the_signature(
    tmp_path: Path,
    auditor: Path,
    *,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = producer_key(tmp_path)
    bundle = build_signed(tmp_path, key)
    rehash(bundle, {"risk/b.csv": b"id,score\nc1,9\n"})
    assert verify_bundle(bundle) == []  # every hash agrees: hashes alone prove nothing
    public = write_public_key(key, auditor / "producer.pem")
    code, _, err = run_verify(capsys, monkeypatch, auditor, bundle, "--public-key", str(public))
    assert code == 5
    assert "manifest.sig: the signature does not match manifest.json" in err
    assert "1 problem(s)" in err


def test_a_bundle_signed_by_another_key_fails_on_the_fingerprint(
    tmp_path: Path,
    auditor: Path,
    *,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = producer_key(tmp_path)
    bundle = build_signed(tmp_path, key)
    forger = Ed25519PrivateKey.generate()
    # The forger replaces the bundle's public key and names it: the bundle is consistent with
    # itself, so only a key from outside the bundle tells.
    rehash(
        bundle,
        {"risk/b.csv": b"id,score\nc1,9\n", PUBLIC_KEY: public_key_pem(forger.public_key())},
        signing={"public_key_sha256": fingerprint(forger.public_key())},
    )
    sign_as(bundle, forger)
    assert verify_bundle(bundle, forger.public_key()) == []
    public = write_public_key(key, auditor / "producer.pem")
    code, _, err = run_verify(capsys, monkeypatch, auditor, bundle, "--public-key", str(public))
    assert code == 5
    assert "the key fingerprint does not match" in err
    assert fingerprint(key.public_key()) in err and fingerprint(forger.public_key()) in err


def test_another_key_that_keeps_the_producers_fingerprint_fails_the_signature(
    tmp_path: Path,
) -> None:
    key = producer_key(tmp_path)
    bundle = build_signed(tmp_path, key)
    rehash(bundle, {"risk/b.csv": b"id,score\nc1,9\n"})
    sign_as(bundle, Ed25519PrivateKey.generate())
    assert verify_bundle(bundle, key.public_key()) == [
        "manifest.sig: the signature does not match manifest.json: the manifest was changed "
        "after it was signed (a forged re-hash?)"
    ]


def test_an_unsigned_bundle_says_it_is_unsigned(
    tmp_path: Path,
    auditor: Path,
    *,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = producer_key(tmp_path)
    bundle = build_signed(tmp_path, None)
    assert not (bundle / SIGNATURE).exists() and verify_bundle(bundle) == []
    public = write_public_key(key, auditor / "producer.pem")
    for target in (bundle, bundle.with_suffix(".zip")):
        code, _, err = run_verify(capsys, monkeypatch, auditor, target, "--public-key", str(public))
        assert code == 5
        assert "manifest.sig: missing: the bundle is unsigned" in err


def test_removing_the_signature_of_a_signed_bundle_makes_it_unsigned(tmp_path: Path) -> None:
    key = producer_key(tmp_path)
    bundle = build_signed(tmp_path, key)
    (bundle / SIGNATURE).unlink()
    [problem] = verify_bundle(bundle, key.public_key())
    assert problem.startswith("manifest.sig: missing: the bundle is unsigned")


def test_in_the_checkout_the_configured_key_pair_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "checkout"
    key = producer_key(checkout)
    (checkout / "params.yaml").write_text(f"export:\n  signing_key: {KEY_PARAM}\n")
    bundle = build_signed(checkout, key)
    code, out, err = run_verify(capsys, monkeypatch, checkout, bundle)
    assert code == 0, err
    assert json.loads(out)["public_key_from"] == KEY_PARAM
    rehash(bundle, {"report.html": b"<html>all fine</html>"})
    code, _, err = run_verify(capsys, monkeypatch, checkout, bundle)
    assert code == 5 and "the signature does not match" in err


def test_without_a_trusted_key_verification_refuses_to_guess(
    tmp_path: Path,
    auditor: Path,
    *,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bundle ships its public key, but trusting it would let a forger vouch for himself."""
    bundle = build_signed(tmp_path, producer_key(tmp_path))
    code, _, err = run_verify(capsys, monkeypatch, auditor, bundle)
    assert code == 1
    assert "no public key to check the bundle's signature with" in err
    assert "--public-key" in err
    private = tmp_path / KEY_PARAM
    code, _, err = run_verify(capsys, monkeypatch, auditor, bundle, "--public-key", str(private))
    assert code == 1 and "a private key" in err


def test_the_private_key_is_nowhere_in_the_bundle(tmp_path: Path) -> None:
    key = producer_key(tmp_path)
    bundle = build_signed(tmp_path, key)
    raw = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    pem = (tmp_path / KEY_PARAM).read_bytes()
    body = b"".join(line for line in pem.splitlines() if not line.startswith(b"-----"))
    secrets = [raw, raw.hex().encode(), base64.b64encode(raw), body, b"PRIVATE KEY"]
    files = {
        p.relative_to(bundle).as_posix(): p.read_bytes() for p in bundle.rglob("*") if p.is_file()
    }
    with zipfile.ZipFile(bundle.with_suffix(".zip")) as archive:
        files.update({f"zip:{n}": archive.read(n) for n in archive.namelist()})
    assert "signing/public_key.pem" in files and "zip:manifest.sig" in files
    leaked = [name for name, data in files.items() for s in secrets if s in data]
    assert leaked == []


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_the_signature_can_be_checked_without_veiltune(tmp_path: Path) -> None:
    """The commands VERIFY.md gives, run as it gives them."""
    key = producer_key(tmp_path)
    bundle = build_signed(tmp_path, key)
    public = write_public_key(key, tmp_path / "producer.pem")
    signature = tmp_path / "manifest.sig.bin"
    signature.write_bytes(base64.b64decode((bundle / SIGNATURE).read_text()))
    note = (bundle / "VERIFY.md").read_text()
    assert "openssl pkeyutl -verify -pubin -inkey PRODUCER_KEY.pem -rawin" in note

    def openssl_verify() -> subprocess.CompletedProcess[bytes]:
        command = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(public), "-rawin"]
        command += ["-in", str(bundle / "manifest.json"), "-sigfile", str(signature)]
        return subprocess.run(command, capture_output=True, check=False)

    assert openssl_verify().returncode == 0
    der = subprocess.run(
        ["openssl", "pkey", "-pubin", "-in", str(public), "-outform", "DER"],
        capture_output=True,
        check=True,
    ).stdout
    assert (
        hashlib.sha256(der[-32:]).hexdigest()
        == read_manifest(bundle)["signing"]["public_key_sha256"]
    )
    rehash(bundle, {"risk/b.csv": b"id,score\nc1,9\n"})
    assert openssl_verify().returncode != 0


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A real MLflow sqlite store in ``tmp_path`` holding version 1 of veiltune-adapter."""
    from mlflow.tracking import MlflowClient

    from components.core.tracking import tracking_uri

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    client = MlflowClient(tracking_uri=tracking_uri())
    client.create_registered_model(REGISTERED["model_name"])
    version = client.create_model_version(REGISTERED["model_name"], source=tmp_path.as_uri())
    assert str(version.version) == REGISTERED["model_version"]
    return client


def test_against_registry_passes_on_the_recorded_bundle_and_catches_another(
    tmp_path: Path,
    registry: Any,
    *,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = producer_key(tmp_path)
    (tmp_path / "params.yaml").write_text(f"export:\n  signing_key: {KEY_PARAM}\n")
    recorded = build_signed(tmp_path / "first", key)
    [problem] = registry_problems(
        registry, read_manifest(recorded), signature=read_signature(recorded)
    )
    assert problem.startswith("registry: veiltune-adapter v1: records no bundle")
    record_bundle(
        registry, read_manifest(recorded), signature=read_signature(recorded) or "", run_id="run-1"
    )
    tags = registry.get_model_version("veiltune-adapter", "1").tags
    assert tags[MANIFEST_TAG] == read_manifest(recorded)["manifest_sha256"]
    assert tags[SIGNATURE_TAG] == (recorded / SIGNATURE).read_text().strip()

    code, out, err = run_verify(capsys, monkeypatch, tmp_path, recorded, "--against-registry")
    assert code == 0, err
    assert json.loads(out)["against_registry"] is True

    # Validly signed by the same key, but not the bundle the registry recorded.
    other = build_signed(tmp_path / "second", key)
    rehash(other, {"report.html": b"<html>another</html>"})
    sign_as(other, key)
    assert verify_bundle(other, key.public_key()) == []
    code, _, err = run_verify(capsys, monkeypatch, tmp_path, other, "--against-registry")
    assert code == 5
    assert f"registry: veiltune-adapter v1: records manifest sha256 {tags[MANIFEST_TAG]}" in err
    assert "records another signature than this bundle's" in err
    code, _, err = run_verify(capsys, monkeypatch, tmp_path, other)
    assert code == 0, err  # without --against-registry nothing compares it


def _stored_files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != FOLDER_MARK
    }


def test_fetch_downloads_a_versions_bundle_from_the_artifact_store_and_checks_it(
    tmp_path: Path, registry: Any, *, capsys: pytest.CaptureFixture[str]
) -> None:
    key = producer_key(tmp_path)
    (tmp_path / "params.yaml").write_text(f"export:\n  signing_key: {KEY_PARAM}\n")
    recorded = build_signed(tmp_path / "first", key)
    assert main(["export", "--fetch", "1"]) == 1  # exported before bundles were stored
    assert f"records no bundle in the artifact store (no tag {RUN_TAG})" in capsys.readouterr().err
    # stored as the export stage stores it: the folder under bundle/ of its run
    run = registry.create_run("0").info.run_id
    registry.log_artifacts(run, str(recorded), ARTIFACT_PATH)
    record_bundle(
        registry, read_manifest(recorded), signature=read_signature(recorded) or "", run_id=run
    )
    assert registry.get_model_version("veiltune-adapter", "1").tags[RUN_TAG] == run

    assert main(["export", "--fetch", "1"]) == 0, capsys.readouterr().err
    fetched = json.loads(capsys.readouterr().out)
    assert fetched["against_registry"] is True and fetched["signed"] is True
    assert fetched["fetched_from"] == f"runs:/{run}/bundle"
    assert fetched["bundle"] == "exports/veiltune-adapter-v1"
    assert _stored_files(tmp_path / fetched["bundle"]) == _stored_files(recorded)

    # The stored copy altered: refused, and nothing written.
    stored = Path(registry.get_run(run).info.artifact_uri.removeprefix("file://")) / "bundle"
    (stored / "report.html").write_bytes(b"<html>altered</html>")
    assert main(["export", "--fetch", "1", "--output", "again"]) == 5
    assert "report.html" in capsys.readouterr().err
    assert not (tmp_path / "again").exists()
    assert main(["export", "--output", "again"]) == 1
    assert "add --fetch VERSION" in capsys.readouterr().err


def test_the_verify_options_without_verify_are_refused(
    auditor: Path, capsys: pytest.CaptureFixture[str], *, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(auditor)
    assert main(["export", "--public-key", "producer.pem"]) == 1
    assert "add --verify BUNDLE" in capsys.readouterr().err


def test_the_manifest_states_when_it_was_made_inside_what_is_signed(tmp_path: Path) -> None:
    key = producer_key(tmp_path)
    bundle = build_signed(tmp_path, key)
    stamp = read_manifest(bundle)["created_at"]
    made = datetime.fromisoformat(stamp)
    assert stamp.endswith("Z") and made.tzinfo is not None
    assert abs((datetime.now(UTC) - made).total_seconds()) < 60
    for target in (bundle, bundle.with_suffix(".zip")):
        assert verify_bundle(target, key.public_key()) == []
    # the stage's time is the manifest's, so the report and the manifest agree
    lineage = {"git_commit": "abc", "created_at": "2026-01-02T03:04:05Z"}
    other = tmp_path / "other"
    build_bundle({"a.txt": b"a"}, lineage, bundle_dir=other, make_zip=False, signing_key=key)
    assert read_manifest(other)["created_at"] == "2026-01-02T03:04:05Z"
    assert created_at(datetime(2026, 1, 2, 4, 4, 5, tzinfo=timezone(timedelta(hours=1)))) == (
        "2026-01-02T03:04:05Z"
    )
