"""`dvc repro` of the whole pipeline in a temporary git repo, with real components."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from components.core.lineage import sha256_file
from components.gate.binding import CORPUS_KEY, RISK_TABLE_KEY
from components.ingest.pi_inventory import InventoryEntry
from tests.offline_html import remote_references
from tests.pipeline_repo import TINY_DIALOGSUM, dvc_repro, make_pipeline_repo

pytestmark = pytest.mark.slow

N_CONVERSATIONS = 14 + TINY_DIALOGSUM  # generated, then DialogSum's
STAGES = (
    "ingest",
    "base_model",
    "anonymize",
    "risk",
    "review",
    "gate",
    "train",
    "evaluate",
    "audit",
    "register",
    "export",
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, base_model_dir: Path) -> Path:
    """The one `dvc repro` of every stage, on the tiny base model (the oracle's `dvc exp run`
    follows on it): nothing here depends on what a pretrained model says, and `make run`
    runs the pipeline on the real SmolLM2."""
    repo = make_pipeline_repo(tmp_path_factory.mktemp("e2e"), base_model_dir)
    result = dvc_repro(repo)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return repo


def metrics(repo: Path, stage: str) -> dict[str, Any]:
    return json.loads((repo / "metrics" / f"{stage}.json").read_text())


def test_every_stage_wrote_its_outputs_and_metrics(repo: Path) -> None:
    for stage in STAGES[:-1]:
        assert (repo / "metrics" / f"{stage}.json").is_file(), stage
    assert metrics(repo, "ingest")["n_conversations"] == N_CONVERSATIONS
    assert metrics(repo, "ingest")["by_context"]["dialogue"] == TINY_DIALOGSUM
    assert metrics(repo, "ingest")["by_dataset"] == {
        "dialogsum": TINY_DIALOGSUM,
        "main": N_CONVERSATIONS - TINY_DIALOGSUM,
    }
    assert (repo / "models" / "base" / "config.json").is_file()
    assert (repo / "models" / "adapter" / "adapter_config.json").is_file()
    anonymized = (repo / "data" / "anonymized" / "corpus.jsonl").read_text().splitlines()
    # the shipped params replace with realistic surrogates, never placeholders
    assert len(anonymized) == N_CONVERSATIONS and "[PERSON_NAME_" not in anonymized[0]
    assert metrics(repo, "anonymize")["replacements_by_method"]["surrogate/realistic"] > 0
    risk = metrics(repo, "risk")
    assert {"mean", "std", "p95", "max", "mu_plus_sigma", "by_context"} <= set(risk)
    # the headline for `dvc metrics show`; every statistic in data/risk/breakdown.json
    breakdown = json.loads((repo / "data" / "risk" / "breakdown.json").read_text())
    assert "by_source" not in risk and "by_context" not in risk["estimate"]
    assert {"ground_truth", "estimate"} == set(breakdown["by_source"])
    assert breakdown["estimate"]["by_context"] and breakdown["mean"] == risk["mean"]
    gate = metrics(repo, "gate")
    assert gate["passed"] is True and gate["threshold"] == 5.0
    assert gate["mu_plus_sigma"] == pytest.approx(risk["mu_plus_sigma"], abs=1e-3)
    # the verdict names what it judged, and train checked that it trained on it
    corpus_sha = sha256_file(repo / "data" / "anonymized" / "corpus.jsonl")
    assert gate[CORPUS_KEY] == risk[CORPUS_KEY] == metrics(repo, "train")[CORPUS_KEY] == corpus_sha
    assert gate[RISK_TABLE_KEY] == sha256_file(repo / "data" / "risk" / "risk_table.csv")
    assert metrics(repo, "train")["steps"] == 2
    adapter_config = json.loads((repo / "models" / "adapter" / "adapter_config.json").read_text())
    assert adapter_config["target_modules"] == sorted(adapter_config["target_modules"])
    audit = metrics(repo, "audit")
    assert set(audit["audits"]) == {
        "pii_output",
        "canary",
        "extraction",
        "membership",
        "plain_sight",
        "dp_one_run",
    }
    assert audit["audits"]["plain_sight"]["passed"]  # it reports, never fails
    # trained without DP: the one-run audit reports its bound and holds it to no claim
    one_run = audit["audits"]["dp_one_run"]
    assert one_run["passed"] and one_run["thresholds"] == {"max_epsilon_lower_bound": "none"}
    assert metrics(repo, "train")["n_audit_canaries"] > 0
    # the per-item figures are in the audit's detail file, not a column each of its metrics
    details = json.loads((repo / "data" / "audit" / "details.json").read_text())
    assert "pii_leaks_by_type" not in audit["audits"]["pii_output"]["figures"]
    assert "pii_leaks_by_type" in details["pii_output"]
    assert set(audit["audits"]["canary"]["figures"]["canary_exposure"]) == {"1", "2"}
    lock = (repo / "dvc.lock").read_text()
    for stage in STAGES:
        assert f"  {stage}:" in lock


def test_risk_review_and_gate_outputs(repo: Path) -> None:
    risk = metrics(repo, "risk")
    # the embedded corpus carries labelled PI, DialogSum none: scored by the estimate
    assert risk["source"] == "mixed"
    assert (risk["n_ground_truth"], risk["n_estimate"]) == (14, TINY_DIALOGSUM)
    assert {"precision", "recall", "score_pearson_r"} <= set(risk["estimator_agreement"])
    assert risk["estimate"]["count"] == risk["count"] == N_CONVERSATIONS
    for name in (
        "report.md",
        "report.html",
        "histogram.png",
        "estimate_table.csv",
        "residual_items.jsonl",
    ):
        assert (repo / "data" / "risk" / name).is_file(), name
    assert "**total**" in (repo / "data" / "risk" / "report.md").read_text()
    sample = (repo / "data" / "review" / "review_sample.jsonl").read_text().splitlines()
    assert len(sample) == metrics(repo, "review")["sampled"] == N_CONVERSATIONS  # 40 > corpus
    assert "MISSED_" in (repo / "data" / "review" / "review.html").read_text()
    assert (repo / "data" / "gate" / "validation.html").is_file()
    assert remote_references(repo / "data") == []  # every page under data/ renders offline


def test_mlflow_holds_one_pipeline_run_with_a_child_per_stage(repo: Path) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{repo / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("veiltune")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if r.data.tags.get("veiltune.kind") == "pipeline"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    children = {r.data.tags["veiltune.stage"]: r for r in runs if "veiltune.stage" in r.data.tags}
    assert set(children) == set(STAGES)
    assert all(
        r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in children.values()
    )
    assert children["train"].data.params["train.max_steps"] == "2"
    assert len(client.get_metric_history(children["train"].info.run_id, "loss")) == 2
    assert "mu_plus_sigma" in children["gate"].data.metrics


def test_registered_version_aliases_and_tags(repo: Path) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{repo / 'mlflow.db'}")
    register = metrics(repo, "register")
    version = client.get_model_version("veiltune-adapter", register["model_version"])
    assert "candidate" in version.aliases
    champion = metrics(repo, "gate")["passed"] and metrics(repo, "audit")["passed"]
    assert ("champion" in version.aliases) == champion == register["champion"]
    assert version.tags["gate_passed"] == "true"
    assert {"audit_passed", "git_commit", "params_hash", "data_version"} <= set(version.tags)
    rouge1 = metrics(repo, "evaluate")["adapter"]["summary.rouge1"]
    assert float(version.tags["eval.summary.rouge1"]) == pytest.approx(rouge1)
    assert register["previous_champion"] is None  # the first version: no champion to beat
    assert version.tags["promotion_reason"] == register["decision_reason"]
    assert "data/anonymized" in json.loads(version.tags["data_version"])


def test_registered_model_loads_back_and_generates(
    repo: Path, tmp_path: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mlflow
    import pandas as pd

    uri = f"sqlite:///{repo / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # set_tracking_uri sets it too: undo after
    monkeypatch.setenv("VEILTUNE_MODEL_CACHE", str(tmp_path / "cache"))
    mlflow.set_tracking_uri(uri)
    monkeypatch.chdir(tmp_path)  # not the checkout: the version names no local path
    model = mlflow.pyfunc.load_model("models:/veiltune-adapter@candidate")
    request = pd.DataFrame(
        [{"task": "summary", "transcript": "[PERSON_NAME_1]: I would like a refund."}]
    )
    outputs = model.predict(request, params={"max_new_tokens": 6})
    # the tiny random model's text is any tokens (often newlines): that it answers is the claim
    assert len(outputs) == 1 and isinstance(outputs[0], str) and outputs[0]


def test_export_bundle_verifies(repo: Path) -> None:
    from mlflow.tracking import MlflowClient

    from components.core.lineage import sha256_file
    from components.export.bundle import verify_bundle
    from components.export.signing import fingerprint, public_key_pem, read_private_key

    bundle = repo / "exports" / "bundle"
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert {
        "dvc.lock",
        "params.yaml",
        "report.html",
        "model_card.md",
        "model_card.html",
        "pi_scan.json",
        "risk/risk_table.csv",
        "risk/histogram.png",
        "gate/validation.json",
        "gate/validation.html",
        "review/review_sample.jsonl",
        "review/review.html",
        "policy/anonymize.json",
        "policy/exclusions/PERSON_NAME.txt",
        "policy/dictionaries.json",
        "model/adapter_config.json",
        "metrics/register.json",
        "metrics/audit.json",
    } <= set(manifest["files"])
    assert manifest["dvc_lock_sha256"] == sha256_file(bundle / "dvc.lock")
    registered = manifest["registered_model"]
    assert registered["model_version"] == metrics(repo, "register")["model_version"]
    client = MlflowClient(tracking_uri=f"sqlite:///{repo / 'mlflow.db'}")
    live = client.get_model_version("veiltune-adapter", registered["model_version"]).aliases
    assert registered["aliases"] == sorted(live)
    assert registered["aliases_source"] == "MLflow model registry at export time"
    assert manifest["mlflow"]["pipeline_run_id"]
    # Signed with the key made on first use outside the raw data, private, never bundled.
    key_file = repo / ".veiltune" / "keys" / "signing_key.pem"
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert key_file.parent.stat().st_mode & 0o777 == 0o700
    public = read_private_key(key_file).public_key()
    assert manifest["signing"]["public_key_sha256"] == fingerprint(public)
    assert (bundle / "signing" / "public_key.pem").read_bytes() == public_key_pem(public)
    assert fingerprint(public) in (bundle / "report.html").read_text()
    assert not [p for p in bundle.rglob("*") if p.is_file() and b"PRIVATE KEY" in p.read_bytes()]
    assert verify_bundle(bundle, public) == []
    assert verify_bundle(repo / "exports" / "bundle.zip", public) == []
    # ... and recorded on the version it bundles.
    tags = client.get_model_version("veiltune-adapter", registered["model_version"]).tags
    assert tags["bundle.manifest_sha256"] == manifest["manifest_sha256"]
    assert tags["bundle.signature"] == (bundle / "manifest.sig").read_text().strip()


def test_export_report_reads_top_to_bottom(repo: Path) -> None:
    import base64

    page = (repo / "exports" / "bundle" / "report.html").read_text()
    ids = re.findall(r'<section id="([^"]+)">', page)
    assert ids == [
        "data",
        "removed",
        "residual-risk",
        "audits",
        "utility",
        "sensitive",
        "decision",
        "lineage",
    ]
    histogram = (repo / "data" / "risk" / "histogram.png").read_bytes()
    embedded = [base64.b64decode(m) for m in re.findall(r"data:image/png;base64,([^\"]+)", page)]
    assert histogram in embedded and len(embedded) >= 3  # histogram, audits, utility
    assert not re.search(r"https?://", re.sub(r"base64,[^\"]+", "", page))
    assert remote_references(repo / "exports" / "bundle") == []
    assert "DialogSum" in page and "CC BY-NC-SA 4.0" in page  # named with its licence
    assert f"version {metrics(repo, 'register')['model_version']}" in page
    assert "No privacy–utility report was present" in page  # made later, by the oracle test


def _inventory_and_salt(repo: Path) -> tuple[list[InventoryEntry], str]:
    from components.ingest.pi_inventory import read_inventory

    entries = read_inventory(repo / "data" / "pi_inventory" / "gold.jsonl")
    return entries, (repo / "data" / "raw" / "salt").read_text().strip()


def _a_raw_identifying_value(repo: Path, entries: list[InventoryEntry], *, salt: str) -> str:
    """A value of the raw corpus that the inventory holds as identifying."""
    from components.core.corpus import load_corpus
    from components.ingest.pi_inventory import normalized, salted_digest

    specific = {e.digest for e in entries if e.specific and e.n_chars >= 8}
    for conversation in load_corpus(repo / "data" / "raw" / "corpus.jsonl"):
        for span in conversation.pi:
            turn = conversation.turns[span.turn]
            text = turn.text if span.field == "text" else turn.speaker or ""
            value = text[span.start : span.end]
            if salted_digest(normalized(value), salt) in specific:
                return value
    raise AssertionError("no identifying value in the raw corpus")


def test_the_bundle_pi_scan_passes_and_catches_a_planted_value(repo: Path, tmp_path: Path) -> None:
    import shutil

    from components.export.scan import scan_bundle

    entries, salt = _inventory_and_salt(repo)
    bundle = repo / "exports" / "bundle"
    scan = scan_bundle(bundle, entries, salt=salt, min_chars=4)
    assert scan.passed, scan.describe_leaks()
    assert len(scan.scanned) >= 25 and "report.html" in scan.scanned
    assert all(r.startswith(("binary file", "PNG image")) for r in scan.skipped.values())
    assert scan_bundle(repo / "exports" / "bundle.zip", entries, salt=salt, min_chars=4).passed
    recorded = json.loads((bundle / "pi_scan.json").read_text())
    assert recorded["passed"] is True and recorded["leaks_by_file"] == {}
    # the detector read every text file too, and the raw corpus confirmed none of its findings
    assert recorded["detector"]["passed"] is True and recorded["detector"]["n_files"] >= 25

    planted = shutil.copytree(bundle, tmp_path / "bundle")
    value = _a_raw_identifying_value(repo, entries, salt=salt)
    (planted / "metrics" / "note.json").write_text(json.dumps({"note": f"call\n{value}"}))
    caught = scan_bundle(planted, entries, salt=salt, min_chars=4)
    assert not caught.passed and set(caught.leaks) == {"metrics/note.json"}
    assert value.lower() not in caught.describe_leaks().lower()


def test_export_verify_cli_on_the_real_bundle(repo: Path, tmp_path: Path) -> None:
    import shutil
    import subprocess

    from components.export.signing import public_key_pem, read_private_key
    from tests.pipeline_repo import BIN, pipeline_env

    # An auditor outside the checkout holds the producer's public key only.
    producer = read_private_key(repo / ".veiltune" / "keys" / "signing_key.pem").public_key()
    (tmp_path / "producer.pem").write_bytes(public_key_pem(producer))

    def verify(
        target: Path, *options: str, cwd: Path = tmp_path
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "veiltune"), "export", "--verify", str(target), *options],
            cwd=cwd,
            env=pipeline_env(),
            capture_output=True,
            text=True,
            check=False,
        )

    with_key = ("--public-key", str(tmp_path / "producer.pem"))
    assert verify(repo / "exports" / "bundle.zip", *with_key).returncode == 0
    in_checkout = verify(repo / "exports" / "bundle", "--against-registry", cwd=repo)
    assert in_checkout.returncode == 0, in_checkout.stderr
    # the registered version's bundle, from the artifact store: the files export wrote
    fetched = subprocess.run(
        [str(BIN / "veiltune"), "export", "--fetch", "1", "--output", str(tmp_path / "v1")],
        cwd=repo, env=pipeline_env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    assert json.loads(fetched.stdout)["fetched_from"].endswith("/bundle")
    exported = repo / "exports" / "bundle"
    assert sorted(p.relative_to(tmp_path / "v1") for p in (tmp_path / "v1").rglob("*")) == sorted(
        p.relative_to(exported) for p in exported.rglob("*")
    )
    assert (tmp_path / "v1" / "manifest.json").read_bytes() == (
        exported / "manifest.json"
    ).read_bytes()
    assert verify(repo / "exports" / "bundle.zip").returncode == 1  # no key: it says so
    copy = shutil.copytree(repo / "exports" / "bundle", tmp_path / "bundle")
    (copy / "report.html").write_text("<p>all fine</p>")
    (copy / "model_card.md").unlink()
    tampered = verify(copy, *with_key)
    assert tampered.returncode == 5
    assert "report.html: sha256 differs from the manifest (tampered)" in tampered.stderr
    assert "model_card.md: missing" in tampered.stderr
    assert "manifest.sig" not in tampered.stderr  # the manifest itself is as signed


def test_export_refuses_a_bundle_with_planted_pi_and_writes_nothing(
    repo: Path, tmp_path: Path
) -> None:
    import shutil
    import subprocess

    from tests.pipeline_repo import BIN, pipeline_env

    work = tmp_path / "work"
    for name in ("data", "metrics", "veiltune/policy", "params.yaml", "dvc.lock", "mlflow.db"):
        source = repo / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, work / name)
    (work / "models" / "adapter").mkdir(parents=True)
    shutil.copy2(repo / "models" / "adapter" / "adapter_config.json", work / "models" / "adapter")
    entries, salt = _inventory_and_salt(repo)
    value = _a_raw_identifying_value(repo, entries, salt=salt)
    (work / "metrics" / "planted.json").write_text(json.dumps({"note": value}))

    run = subprocess.run(
        [str(BIN / "veiltune"), "export"],
        cwd=work,
        env=pipeline_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 4, run.stderr[-2000:]
    assert "metrics/planted.json" in run.stderr and "nothing was written" in run.stderr
    assert value.lower() not in (run.stdout + run.stderr).lower()
    assert not (work / "exports").exists() or not any((work / "exports").iterdir())
    # Without an inventory, the detector's scan refuses it: tests/export/test_detector_scan.py


def test_no_raw_pi_outside_the_raw_data(repo: Path) -> None:
    from components.core.corpus import load_corpus
    from components.core.lineage import sha256_file

    values = set()
    for conversation in load_corpus(repo / "data" / "raw" / "corpus.jsonl"):
        for span in conversation.pi:
            turn = conversation.turns[span.turn]
            text = turn.text if span.field == "text" else turn.speaker or ""
            value = text[span.start : span.end].lower()
            if len(value) >= 6:
                values.add(value)
    assert values
    # The base model's own files (its tokenizer vocabulary holds common names) are not data.
    base_files = {sha256_file(p) for p in (repo / "models" / "base").iterdir()}
    text_suffixes = {".json", ".csv", ".jsonl", ".yaml", ".txt", ".html", ".md", ".jinja", ""}
    scanned = 0
    for folder in (
        "metrics",
        "exports",
        "mlartifacts",
        "data/risk",
        "data/gate",
        "data/pi_inventory",
    ):
        for path in (repo / folder).rglob("*"):
            if not path.is_file() or path.suffix not in text_suffixes:
                continue
            if sha256_file(path) in base_files:
                continue
            content = path.read_text(errors="ignore").lower()
            scanned += 1
            # Whole words: "carrie" inside "carrier" (a review sample's text) is no leak.
            leaked = [v for v in values if re.search(rf"(?<!\w){re.escape(v)}(?!\w)", content)]
            assert not leaked, f"{path.relative_to(repo)} holds raw PI"
    assert scanned >= 10
    store = (repo / "mlflow.db").read_bytes().decode("utf-8", errors="ignore").lower()
    assert not [v for v in values if v in store], "the MLflow store holds raw PI"


def test_second_repro_skips_every_stage_and_registers_nothing_new(repo: Path) -> None:
    from mlflow.tracking import MlflowClient

    registered = (repo / "metrics" / "register.json").read_text()
    result = dvc_repro(repo)
    assert result.returncode == 0, result.stderr[-2000:]
    for stage in STAGES:
        if stage != "register":  # its effect is the registry: it always checks it
            assert f"Stage '{stage}' didn't change, skipping" in result.stdout, stage
    assert "Running stage 'register'" in result.stdout
    assert [line for line in result.stdout.splitlines() if "Running stage" in line] == [
        "Running stage 'register':"
    ]
    assert (repo / "metrics" / "register.json").read_text() == registered
    client = MlflowClient(tracking_uri=f"sqlite:///{repo / 'mlflow.db'}")
    assert len(client.search_model_versions("name='veiltune-adapter'")) == 1


def test_evaluate_scores_adapter_and_base_on_heldout_raw_text(repo: Path) -> None:
    evaluated = metrics(repo, "evaluate")
    assert evaluated["variant"] == "surrogate-realistic" and evaluated["n_conversations"] >= 1
    assert {"train_seed", "train_steps"} <= set(evaluated)
    # 3 of the 6 DialogSum dialogues are held out; max_conversations 2 applies per dataset
    assert evaluated["dialogsum.n_conversations"] == 2
    for model in ("adapter", "base"):
        scores = evaluated[model]
        assert scores["perplexity_raw"] > 1 and scores["dialogsum.perplexity_raw"] > 1
        assert {"summary.rouge1", "summary.rougeL", "purpose.macro_f1", "outcome.accuracy"} <= set(
            scores
        )
        assert scores["n_examples"]["purpose"] == evaluated["n_conversations"]  # generated only
        assert scores["dialogsum.n_examples"]["summary"] == 2
        assert {"dialogsum.summary.rouge1", "dialogsum.summary.rouge2"} <= set(scores)


def _dvc_json(repo: Path, *args: str) -> Any:
    import subprocess

    from tests.pipeline_repo import BIN, pipeline_env

    run = subprocess.run(
        [str(BIN / "dvc"), *args, "--json"],
        cwd=repo,
        env=pipeline_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "failed to load" not in run.stderr, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_dvc_shows_the_metrics_and_draws_the_plots(repo: Path) -> None:
    (workspace,) = _dvc_json(repo, "metrics", "show").values()  # the workspace, keyed ""
    shown = workspace["data"]
    assert {f"metrics/{stage}.json" for stage in STAGES[:-1]} <= set(shown)
    for stage in ("gate", "risk", "audit", "train", "evaluate"):
        assert shown[f"metrics/{stage}.json"]["data"], stage  # read, none "!"
    assert shown["metrics/gate.json"]["data"]["passed"] is True
    plots = _dvc_json(repo, "plots", "show")["data"]
    assert set(plots) == {
        "metrics/train_loss.csv",
        "metrics/utility.csv",
        "data/risk/risk_table.csv",
        "data/risk/histogram.png",
    }
    values = {
        name: plot[0]["content"]["data"]["values"]
        for name, plot in plots.items()
        if plot[0]["type"] == "vega"
    }
    assert [int(row["step"]) for row in values["metrics/train_loss.csv"]] == [1, 2]
    assert all(float(row["loss"]) > 0 for row in values["metrics/train_loss.csv"])
    utility = {row["metric"]: row for row in values["metrics/utility.csv"]}
    adapter = metrics(repo, "evaluate")["adapter"]
    assert float(utility["summary.rouge1"]["adapter"]) == pytest.approx(adapter["summary.rouge1"])
    assert "dialogsum.summary.rouge1" in utility and "perplexity_raw" not in utility
    assert len(values["data/risk/risk_table.csv"]) == N_CONVERSATIONS
    assert set(values["data/risk/risk_table.csv"][0]) >= {"conversation_id", "score", "rev"}
    assert plots["data/risk/histogram.png"][0]["type"] == "image"


def test_oracle_experiment_and_the_utility_report(repo: Path) -> None:
    """Runs last on this repo: the experiment leaves the oracle's outputs in the workspace."""
    import subprocess

    from tests.pipeline_repo import BIN, pipeline_env

    env = pipeline_env()
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "pipeline"], cwd=repo, check=True, env=env)
    run = subprocess.run(
        # evaluate and audit, whose figures the utility report reads; that a raw-trained
        # version is never champion is register's test (tests/veiltune/test_registry_cli.py)
        [
            str(BIN / "dvc"),
            "exp",
            "run",
            "evaluate",
            "audit",
            "-S",
            "train.corpus=raw",
            "-n",
            "oracle",
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert metrics(repo, "evaluate")["variant"] == "oracle"
    # git carries every metrics file in the experiment: none shows as "!" in `dvc exp show`
    baseline = next(e for e in _dvc_json(repo, "exp", "show") if e.get("experiments"))
    oracle = next(e for e in baseline["experiments"] if e["name"] == "oracle")["revs"][0]
    for stage in ("gate", "risk", "audit", "train", "evaluate"):
        shown = oracle["data"]["metrics"][f"metrics/{stage}.json"]
        assert shown.get("data") and not shown.get("error"), stage
    assert oracle["data"]["metrics"]["metrics/audit.json"]["data"]["train_corpus"] == "raw"
    differences = _dvc_json(repo, "metrics", "diff", "HEAD", oracle["rev"])
    assert differences["metrics/train.json"]  # the oracle trained on other text
    diffed = _dvc_json(repo, "plots", "diff", "HEAD", oracle["rev"])["data"]
    revisions = diffed["metrics/train_loss.csv"][0]["revisions"]
    assert len(revisions) == 2 and "HEAD" in revisions
    report = subprocess.run(
        [str(BIN / "veiltune"), "utility-report", "--output", "reports/utility"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert report.returncode == 0, report.stderr[-2000:]
    table = (repo / "reports" / "utility" / "utility.md").read_text()
    for variant in ("base", "surrogate-realistic", "oracle"):
        assert f"| {variant} | " in table and f"| {variant} | (not run)" not in table
    assert "| masked | (not run)" in table
    dialogsum_table = table.partition("DialogSum")[2]
    for variant in ("base", "surrogate-realistic", "oracle"):
        assert f"| {variant} | " in dialogsum_table
        assert f"| {variant} | (not run)" not in dialogsum_table
    report_json = json.loads((repo / "reports" / "utility" / "utility.json").read_text())
    assert "surrogate-realistic perplexity_raw vs oracle" in report_json["comparison"]
    # the privacy beside the utility: each experiment's own gate, risk and audit figures
    privacy = report_json["privacy"]
    assert "DVC experiments" in privacy["source"]
    assert set(privacy["variants"]) == {"surrogate-realistic", "oracle"}
    gate = metrics(repo, "gate")
    for figures in privacy["variants"].values():
        assert figures["gate.passed"] is True and figures["gate.threshold"] == gate["threshold"]
        assert figures["gate.mu_plus_sigma"] == pytest.approx(gate["mu_plus_sigma"])
        assert "audit.membership.mia_auc" in figures and "risk.p95" in figures
    assert privacy["variants"]["oracle"]["audit.passed"] == metrics(repo, "audit")["passed"]
    section = table.partition("Privacy (from")[2]
    assert (
        "| surrogate-realistic | " in section
        and "| oracle | " in section
        and "| base |" not in (section.partition("Difference")[0])
    )
    assert (repo / "reports" / "utility" / "utility.png").read_bytes()[:4] == b"\x89PNG"
