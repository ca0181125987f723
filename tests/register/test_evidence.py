"""Promotion decides from signed evidence, not tags: on a real MLflow store (sqlite in a temp
folder, one for the module: each test its own model), versions carrying evidence as register
stores it (no model logged: fast)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from components.core import paths
from components.core.errors import PromotionRefused
from components.core.lineage import ADAPTER_KEY, TRAINED_CORPUS_KEY
from components.core.signing import KEY_ENV, sign, signing_key
from components.register.champion import promote
from components.register.evidence import EVIDENCE_DIR, RECORD, SIGNATURE, evidence_record
from components.register.promotion import current_champion
from tests.register.fixtures import ADAPTER, PRODUCER, add_version, metrics_files
from veiltune.cli import main

REPO_PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"
TRUSTED = PRODUCER.public_key()


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The checkout's folder: params.yaml, mlflow.db (made once: its migrations are slow)."""
    from components.core.tracking import configure_tracking

    folder = tmp_path_factory.mktemp("checkout")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        patch.delenv(KEY_ENV, raising=False)
        configure_tracking("veiltune")  # sqlite:///<folder>/mlflow.db, as the CLI finds it
        yield folder


@pytest.fixture
def client(home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(home)
    return MlflowClient()


def champion_of(client: Any, model: str) -> str:
    return str(client.get_model_version_by_alias(model, "champion").version)


def relog(client: Any, run_id: str, *, tmp_path: Path, name: str, data: bytes) -> None:
    """Someone replaces one evidence file of a run (MLflow lets anyone log to a run)."""
    folder = tmp_path / "forged"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(data)
    client.log_artifact(run_id, str(folder / name), EVIDENCE_DIR)


def test_flipped_tags_do_not_let_a_blocked_version_through(client: Any) -> None:
    add_version(client, "flip", files=metrics_files())
    promote(client, "flip", version="1", trusted=TRUSTED)
    blocked, _ = add_version(
        client, "flip", files=metrics_files(0.9, gate=False, failed_audits=("canary",))
    )
    for tag in ("gate_passed", "audit_passed", "audit.canary.passed"):
        client.set_model_version_tag("flip", blocked, tag, "true")
    client.set_model_version_tag("flip", blocked, "train_corpus", "anonymized")
    with pytest.raises(PromotionRefused) as refused:
        promote(client, "flip", version=blocked, trusted=TRUSTED)
    assert "refusing to promote flip v2: gate failed; audit failed (canary)" in str(refused.value)
    assert champion_of(client, "flip") == "1"


def test_an_evidence_file_changed_after_registration_is_refused(
    client: Any, tmp_path: Path
) -> None:
    add_version(client, "edit", files=metrics_files())
    promote(client, "edit", version="1", trusted=TRUSTED)
    blocked, run_id = add_version(
        client, "edit", files=metrics_files(failed_audits=("membership",))
    )
    passing = metrics_files().files["audit.json"]
    relog(client, run_id, tmp_path=tmp_path, name="audit.json", data=passing)
    with pytest.raises(PromotionRefused) as refused:
        promote(client, "edit", version=blocked, trusted=TRUSTED)
    message = str(refused.value)
    assert "its evidence does not hold (files: audit.json: sha256" in message
    assert "changed after it was registered" in message and champion_of(client, "edit") == "1"
    # Re-hashing the record too breaks its signature: only the producer's key can sign.
    record = json.loads(evidence_record(metrics_files(), run_id, key=TRUSTED))
    relog(client, run_id, tmp_path=tmp_path, name=RECORD, data=json.dumps(record).encode())
    with pytest.raises(PromotionRefused, match="the evidence was changed after it was signed"):
        promote(client, "edit", version=blocked, trusted=TRUSTED)
    # Forced, it goes through, and still says what failed.
    forced = promote(
        client, "edit", version=blocked, trusted=TRUSTED, force=True, reason="ticket 7"
    )
    assert "(forced over: its evidence does not hold (signature: evidence.sig:" in forced["message"]
    assert champion_of(client, "edit") == blocked


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("another key", "signed by another key"),
        ("no evidence", "registered without signed evidence"),
        ("unsigned", "evidence.sig: missing: the evidence is unsigned"),
        ("copied", "(evidence copied from another version)"),
        ("no key here", "no signing key in this checkout"),
    ],
)
def test_evidence_that_does_not_hold_is_refused_naming_what_failed(
    client: Any, tmp_path: Path, *, case: str, message: str
) -> None:
    forger = Ed25519PrivateKey.generate()
    model = case.replace(" ", "-")
    files = None if case == "no evidence" else metrics_files()
    version, run_id = add_version(
        client, model, files=files, key=forger if case == "another key" else PRODUCER
    )
    if case == "unsigned":
        artifacts = Path(client.get_run(run_id).info.artifact_uri.removeprefix("file://"))
        (artifacts / EVIDENCE_DIR / SIGNATURE).unlink()
    if case == "copied":  # a passing version's evidence, signed, moved to another run
        _, other = add_version(client, model, files=metrics_files())
        record = evidence_record(metrics_files(), other, key=TRUSTED)
        relog(client, run_id, tmp_path=tmp_path, name=RECORD, data=record)
        relog(
            client, run_id, tmp_path=tmp_path, name=SIGNATURE, data=sign(record, PRODUCER).encode()
        )
    trusted = None if case == "no key here" else TRUSTED
    with pytest.raises(PromotionRefused) as refused:
        promote(client, model, version=version, trusted=trusted)
    said = str(refused.value)
    assert f"refusing to promote {model} v{version}: its evidence does not hold (" in said
    assert message in said


@pytest.mark.parametrize(
    ("case", "message"),
    [
        # The hostile review of 2026-11-27: audits of the previous adapter, a corpus set for
        # one run and restored, evidence registered before it named its adapter.
        ("audited another", "adapter: audit.json is of adapter sha256 aaaaaaaaaaaa"),
        ("evaluated another", "adapter: evaluate.json is of adapter sha256 aaaaaaaaaaaa"),
        ("another corpus", "adapter: train.json's corpus is not the one gate.json passed"),
        ("named none", "adapter: evidence.json names no adapter"),
        ("registered another", "registered adapter: v1's adapter is sha256"),
    ],
)
def test_evidence_of_another_adapter_or_corpus_than_the_versions_is_refused(
    client: Any, case: str, *, message: str
) -> None:
    model = case.replace(" ", "-")
    files = metrics_files()
    edits: dict[str, dict[str, Any]] = {
        "audited another": {"audit.json": {ADAPTER_KEY: "a" * 64}},
        "evaluated another": {"evaluate.json": {ADAPTER_KEY: "a" * 64}},
        "another corpus": {"train.json": {TRAINED_CORPUS_KEY: "r" * 64}},
    }
    for name, changes in edits.get(case, {}).items():
        body = {**json.loads(files.files[name]), **changes}
        files = replace(files, files={**files.files, name: json.dumps(body).encode()})
    if case == "named none":
        files = replace(files, adapter_sha256="")
    adapter = (
        {**ADAPTER, "adapter_model.safetensors": b"other"} if "registered" in case else ADAPTER
    )
    version, _ = add_version(client, model, files=files, adapter=adapter)
    with pytest.raises(PromotionRefused) as refused:
        promote(client, model, version=version, trusted=TRUSTED)
    assert f"its evidence does not hold ({message}" in str(refused.value)


def test_a_champion_whose_evidence_fails_is_not_replaced_automatically(
    client: Any, tmp_path: Path
) -> None:
    _, run_id = add_version(client, "fallen", files=metrics_files(0.3))
    promote(client, "fallen", version="1", trusted=TRUSTED)
    champion = current_champion(client, "fallen", metric="summary.rouge1", trusted=TRUSTED)
    assert champion is not None and champion.utility == 0.3
    relog(
        client,
        run_id,
        tmp_path=tmp_path,
        name="evaluate.json",
        data=b'{"adapter": {"summary.rouge1": 0.01}}',
    )
    champion = current_champion(client, "fallen", metric="summary.rouge1", trusted=TRUSTED)
    assert champion is not None and champion.utility is None
    assert champion.problem.startswith("has evidence that does not hold (files: evaluate.json")


@pytest.fixture
def checkout(client: Any, home: Path) -> Path:
    """A checkout's params, its signing key made where export.signing_key names it."""
    (home / "params.yaml").write_text(REPO_PARAMS.read_text(encoding="utf-8"))
    params = yaml.safe_load(REPO_PARAMS.read_text(encoding="utf-8"))
    signing_key(params["export"]["signing_key"], home)
    return home


def check(capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["promote", "--params", "params.yaml", "--check"])
    out, err = capsys.readouterr()
    return code, out, err


def test_promote_check_audits_the_champion_however_it_got_the_alias(
    client: Any, checkout: Path, *, capsys: pytest.CaptureFixture[str]
) -> None:
    key = signing_key(str(paths.SIGNING_KEY), checkout)
    model = "veiltune-adapter"
    add_version(client, model, files=None)  # registered before evidence: none to check
    code, _, err = check(capsys)
    assert code == 1 and "no version holds champion" in err
    add_version(client, model, files=metrics_files(), key=key)
    add_version(client, model, files=metrics_files(gate=False), key=key)
    assert main(["promote", "--params", "params.yaml", "2"]) == 0
    code, out, _ = check(capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "veiltune-adapter v2 (champion): its evidence holds"
    checks = ("evidence", "signature", "run", "files", "adapter", "contents")
    verdicts = ("registered adapter", "gate", "audits", "corpus")
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        f"ok   {name}" for name in (*checks, *verdicts)
    ]
    # MLflow's own alias editor checks nothing: --check finds the blocked version out.
    client.set_registered_model_alias(model, "champion", "3")
    code, out, err = check(capsys)
    assert code == 1
    assert "veiltune-adapter v3 (champion): its evidence does NOT hold" in out
    assert "FAIL gate: failed (μ+σ 7.2, threshold 5)" in out
    assert "champion veiltune-adapter v3 fails its check: gate: failed" in err
    client.set_registered_model_alias(model, "champion", "1")
    code, out, err = check(capsys)
    assert code == 1 and "FAIL evidence: no evidence/evidence.json in run" in out
    assert main(["promote", "--params", "params.yaml", "--check", "2"]) == 1
    assert "promote takes a VERSION, or --check alone" in capsys.readouterr().err
