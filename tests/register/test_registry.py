"""Registry promotion: the decision table (pure) and the register flow on a real MLflow store,
deciding from each version's signed evidence."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from components.core.errors import InputError
from components.gate import GateResult
from components.ingest import corpus_datasets
from components.register.card import CardFacts, adapter_card, privacy_claim
from components.register.evidence import EVIDENCE_TAG, KEY_TAG, RECORD, SIGNATURE
from components.register.promotion import register_version
from components.register.registry import (
    AuditResult,
    ChampionUtility,
    Evidence,
    UtilityRule,
    adapter_metrics,
    audit_result,
    headline_tags,
    promotion_decision,
    utility_of,
    version_tags,
)
from components.register.shared_base import BaseModel, describe_base_model
from tests.register.fixtures import PRODUCER, metrics_files

ROUGE = UtilityRule("summary.rouge1")
PERPLEXITY = UtilityRule("perplexity_raw", higher_is_better=False)


def evidence(utility: float, **changes: Any) -> Evidence:
    fields: dict[str, Any] = {
        "gate_passed": True,
        "audit_passed": True,
        "failed_audits": (),
        "corpus": "anonymized",
    }
    return Evidence(utility=utility, **{**fields, **changes})


@pytest.mark.parametrize(
    ("new", "champion", "rule", "promoted", "reason"),
    [
        (evidence(0.31), None, ROUGE, True, "no current champion; summary.rouge1 0.31"),
        (
            evidence(0.35),
            ChampionUtility("3", 0.33),
            ROUGE,
            True,
            "summary.rouge1 0.35 > champion v3's 0.33",
        ),
        (
            evidence(0.33),
            ChampionUtility("3", 0.33),
            ROUGE,
            True,
            "summary.rouge1 0.33 = champion v3's 0.33",
        ),
        (
            evidence(0.31),
            ChampionUtility("3", 0.33),
            ROUGE,
            False,
            "summary.rouge1 0.31 < champion v3's 0.33",
        ),
        (evidence(0.9, gate_passed=False), None, ROUGE, False, "gate failed"),
        (
            evidence(0.9, audit_passed=False),
            ChampionUtility("3", 0.1),
            ROUGE,
            False,
            "audit failed",
        ),
        (
            evidence(0.9, audit_passed=False, failed_audits=("canary", "membership")),
            None,
            ROUGE,
            False,
            "audit failed (canary, membership)",
        ),
        # A failed audit counts even when the overall flag disagrees.
        (
            evidence(0.9, failed_audits=("extraction",)),
            None,
            ROUGE,
            False,
            "audit failed (extraction)",
        ),
        (
            evidence(0.9, corpus="raw"),
            None,
            ROUGE,
            False,
            "trained on the raw corpus, a baseline that is never champion",
        ),
        (
            evidence(0.9, corpus="masked", gate_passed=False),
            None,
            ROUGE,
            False,
            "gate failed; trained on the masked corpus, a baseline that is never champion",
        ),
        (
            evidence(20.5),
            ChampionUtility("2", 21.5),
            PERPLEXITY,
            True,
            "perplexity_raw 20.5 < champion v2's 21.5 (lower is better)",
        ),
        (
            evidence(22.0),
            ChampionUtility("2", 21.5),
            PERPLEXITY,
            False,
            "perplexity_raw 22 > champion v2's 21.5 (lower is better)",
        ),
        (
            evidence(0.5),
            ChampionUtility("4", None),
            ROUGE,
            False,
            "champion v4 has no summary.rouge1 in its evidence to compare with",
        ),
        (
            evidence(0.5),
            ChampionUtility("4", None, "has evidence that does not hold (signature: ...)"),
            ROUGE,
            False,
            "champion v4 has evidence that does not hold (signature: ...); promote by hand",
        ),
        (evidence(math.nan), None, ROUGE, False, "summary.rouge1 nan is not a finite number"),
    ],
)
def test_promotion_rules(
    new: Evidence,
    champion: ChampionUtility | None,
    *,
    rule: UtilityRule,
    promoted: bool,
    reason: str,
) -> None:
    decision = promotion_decision(new, champion, rule=rule)
    assert decision.champion is promoted
    assert decision.reason.startswith(reason)


NEW_AUDIT = {
    "passed": False,
    "train_corpus": "anonymized",
    "audits": {
        "pii_output": {"passed": True, "figures": {"n_leaks": 0}, "thresholds": {"max_leaks": 0}},
        "canary": {"passed": False, "figures": {"canary_exposure": {"1": 9.1}}, "thresholds": {}},
    },
}


def test_audit_result_reads_each_audit_and_tolerates_the_older_shape() -> None:
    result = audit_result(NEW_AUDIT, "metrics/audit.json")
    assert (result.passed, result.failed) == (False, ("canary",))
    assert result.to_tags() == {
        "audit_passed": "false",
        "audit.pii_output.passed": "true",
        "audit.canary.passed": "false",
    }
    older = audit_result({"passed": True, "pii_output": {"n_leaks": 0}}, "metrics/audit.json")
    assert (older.passed, older.failed, older.to_tags()) == (True, (), {"audit_passed": "true"})
    with pytest.raises(
        InputError, match=r"metrics/audit.json: audits.canary: missing key 'passed'"
    ):
        audit_result({"passed": True, "audits": {"canary": {"figures": {}}}}, "metrics/audit.json")


def test_a_missing_utility_metric_names_the_key_the_param_and_the_file() -> None:
    evaluation = {"adapter": {"summary.rouge1": 0.3, "perplexity_raw": 21.5, "note": "x"}}
    metrics = adapter_metrics(evaluation, "metrics/evaluate.json")
    assert metrics == {"summary.rouge1": 0.3, "perplexity_raw": 21.5}
    assert utility_of(metrics, "perplexity_raw", source="metrics/evaluate.json") == 21.5
    with pytest.raises(InputError) as error:
        utility_of(metrics, "summary.rougeX", source="metrics/evaluate.json")
    message = str(error.value)
    assert message.startswith("metrics/evaluate.json: no numeric key 'summary.rougeX'")
    assert "register.utility_metric" in message and "perplexity_raw, summary.rouge1" in message
    with pytest.raises(InputError, match="metrics/evaluate.json: missing key 'adapter'"):
        adapter_metrics({"base": {}}, "metrics/evaluate.json")


@pytest.fixture(scope="module")
def base(base_model_dir: Path) -> BaseModel:
    return describe_base_model(base_model_dir, "bundled:smollm2")


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import mlflow
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("VEILTUNE_MODEL_CACHE", str(tmp_path / "cache"))
    from components.core.tracking import configure_tracking

    configure_tracking("registry-test")  # sqlite:///<tmp_path>/mlflow.db, artifacts beside it
    assert mlflow.get_tracking_uri() == f"sqlite:///{tmp_path / 'mlflow.db'}"
    return MlflowClient()


PEFT_TEMPLATE = "More Information Needed"
INGEST_METRICS: dict[str, Any] = {
    "n_conversations": 500,
    "n_train": 450,
    "n_heldout": 50,
    "by_dataset": {"main": 300, "dialogsum": 200},
}
BASE_MODEL = {"source": "bundled:smollm2", "model_type": "llama", "n_parameters": 134515008}


def card(gate: GateResult, audit: AuditResult, *, corpus: str, utility: float) -> str:
    """The card the register stage builds, from the shipped ingest params' datasets."""
    datasets = corpus_datasets({}, INGEST_METRICS["by_dataset"])
    facts = CardFacts(
        "m", BASE_MODEL, INGEST_METRICS, datasets, corpus, gate, audit, "summary.rouge1", utility
    )
    return adapter_card(facts)


def register(
    client: Any,
    adapter: Path,
    *,
    base: BaseModel,
    utility: float,
    gate: bool = True,
    corpus: str = "anonymized",
) -> Any:
    import mlflow

    gate_result = GateResult.from_metrics(
        {"passed": gate, "mu_plus_sigma": 0.7, "threshold": 5.0}, "gate.json"
    )
    audit = AuditResult(True, {"pii_output": True, "canary": True})
    tags = version_tags(
        gate_result,
        audit,
        evaluation={"summary.rouge1": utility, "perplexity_raw": 21.0},
        lineage={"git_commit": "abc", "params_hash": "p", "data_version": "{}"},
    )
    tags.update(
        headline_tags(
            gate_result, audit, held=audit.audits, metric="summary.rouge1", utility=utility
        )
    )
    files = metrics_files(utility, gate, corpus=corpus)
    found = mlflow.get_experiment_by_name("registry-test")
    assert found is not None
    experiment = found.experiment_id
    with mlflow.start_run(experiment_id=experiment):
        model_card = card(gate_result, audit, corpus=corpus, utility=utility)
        return register_version(
            client,
            adapter,
            base=base,
            model_name="m",
            tags=tags,
            files=files,
            rule=ROUGE,
            model_card=model_card,
            key=PRODUCER,
        )


def test_register_always_candidate_and_champion_by_the_rule(
    client: Any, lora_adapter_dir: Path, *, base: BaseModel
) -> None:
    first = register(client, lora_adapter_dir, base=base, utility=0.30)
    assert first.aliases == ("candidate", "champion") and first.previous_champion is None
    assert first.decision_reason == "no current champion; summary.rouge1 0.3"

    lower = register(client, lora_adapter_dir, base=base, utility=0.25)
    assert lower.aliases == ("candidate",) and lower.previous_champion == first.version
    assert lower.to_metrics()["decision_reason"] == "summary.rouge1 0.25 < champion v1's 0.3"
    assert champion_of(client) == first.version
    assert str(client.get_model_version_by_alias("m", "candidate").version) == lower.version

    refused = register(
        client, lora_adapter_dir, base=base, utility=0.9, gate=False
    )  # better, but the gate failed
    baseline = register(client, lora_adapter_dir, base=base, utility=0.9, corpus="raw")
    assert champion_of(client) == first.version
    assert refused.to_metrics()["champion"] is False and baseline.to_metrics()["champion"] is False

    equal = register(client, lora_adapter_dir, base=base, utility=0.30)
    assert equal.aliases == ("candidate", "champion") and equal.previous_champion == "1"
    assert champion_of(client) == equal.version == "5"
    assert "champion" not in client.get_model_version("m", "1").aliases
    assert client.get_model_version("m", "1").tags["superseded_by"] == "5"

    tags = client.get_model_version("m", equal.version).tags
    assert tags["promotion_decision"] == "champion"
    assert tags["promotion_reason"] == "summary.rouge1 0.3 = champion v1's 0.3"
    assert {
        k: tags[k]
        for k in (
            "eval.summary.rouge1",
            "eval.perplexity_raw",
            "gate_passed",
            "gate_threshold",
            "audit.canary.passed",
            "train_corpus",
        )
    } == {
        "eval.summary.rouge1": "0.3",
        "eval.perplexity_raw": "21.0",
        "gate_passed": "true",
        "gate_threshold": "5.0",
        "audit.canary.passed": "true",
        "train_corpus": "anonymized",
    }
    rejected = client.get_model_version("m", refused.version).tags
    assert (rejected["promotion_decision"], rejected["promotion_reason"]) == (
        "candidate",
        "gate failed",
    )
    # The five versions share one logged copy of the base model, named by its hash.
    assert tags["base_model_sha256"] == base.sha256 and tags["base_model"] == "bundled:smollm2"
    experiment = client.get_experiment_by_name("registry-test").experiment_id
    kind = "tags.`veiltune.kind` = 'base_model'"
    assert len(client.search_runs([experiment], kind)) == 1
    # The evidence it was judged by lies in its run, signed; the tags only name it.
    run = client.get_model_version("m", equal.version).run_id
    stored = {a.path for a in client.list_artifacts(run, "evidence")}
    assert {f"evidence/{n}" for n in (RECORD, SIGNATURE, "gate.json", "audit.json")} <= stored
    assert len(tags[EVIDENCE_TAG]) == 64 and len(tags[KEY_TAG]) == 64


def champion_of(client: Any) -> str:
    return str(client.get_model_version_by_alias("m", "champion").version)


def test_the_card_names_the_base_model_datasets_and_verdicts() -> None:
    gate = GateResult.from_metrics({"passed": True, "mu_plus_sigma": 0.74, "threshold": 5.0}, "g")
    audit = AuditResult(False, {"pii_output": True, "membership": False})
    text = card(gate, audit, corpus="anonymized", utility=0.33)
    assert text.startswith("# m: a LoRA adapter trained by veiltune\n")
    assert "- source: bundled:smollm2" in text and "- parameters: 134,515,008" in text
    assert "the anonymized text of the training split" in text
    assert "500 (450 train, 50 held out)" in text
    assert "(200 conversations)" in text and "CC BY-NC-SA 4.0" in text  # DialogSum, licensed
    assert "(300 conversations)" in text  # the embedded corpus
    assert "- residual-risk gate: passed (μ+σ 0.74 against threshold 5)" in text
    assert "- leakage audits: failed (membership failed, pii_output passed)" in text
    assert "- summary.rouge1: 0.33" in text
    assert PEFT_TEMPLATE not in text
    baseline = card(gate, audit, corpus="raw", utility=0.4)
    assert "the raw text of the training split" in baseline and "never promoted" in baseline
    assert "- formal guarantee: none (train.privacy off)" in text


def test_the_card_states_the_dp_guarantee_train_spent() -> None:
    train = {
        "dp.epsilon": 7.9812,
        "dp.delta": 1e-5,
        "dp.max_grad_norm": 1.0,
        "dp.noise_multiplier": 0.61,
        "dp.accountant": "prv",
        "dp.target_epsilon": 8.0,
    }
    claim = privacy_claim(train)
    assert claim.startswith("(ε = 7.9812, δ = 1e-05)-differential privacy per conversation")
    assert privacy_claim({"train_loss": 2.0}) == ""
    facts = dataclasses.replace(passed_card_facts(), privacy=claim)
    assert f"- formal guarantee: {claim}" in adapter_card(facts)


def test_the_card_says_which_public_datasets_were_mixed_in_or_none() -> None:
    gate = GateResult.from_metrics({"passed": True, "mu_plus_sigma": 0.7, "threshold": 5.0}, "g")
    ingest = {"corpus_path": "calls.jsonl"}

    def card_of(by_dataset: dict[str, int]) -> str:
        metrics = {**INGEST_METRICS, "by_dataset": by_dataset}
        datasets = corpus_datasets(ingest, by_dataset)
        facts = CardFacts(
            "m", BASE_MODEL, metrics, datasets, "anonymized", gate, AuditResult(True, {}), "u", 0.3
        )
        return adapter_card(facts)

    assert "- Public datasets mixed into the corpus: none." in card_of({"main": 40})
    assert (
        "- Public datasets mixed into the corpus: DialogSum (10 conversations; "
        "CC BY-NC-SA 4.0, non-commercial use only)."
    ) in card_of({"main": 40, "dialogsum": 10})


@pytest.mark.parametrize(
    ("anonymize", "named", "absent"),
    [
        ({}, ["conversational NER", "WNUT-17", "CC BY 4.0", "en_core_web_sm"], ["Rampart"]),
        (
            {"ner": {"model": "rampart"}},
            ["Rampart", "National Design Studio", "CC BY 4.0", "en_core_web_sm"],
            ["WNUT"],
        ),
        ({"ner": {"model": None}}, ["en_core_web_sm", "MIT"], ["Rampart", "CC BY 4.0"]),
        (
            {"spacy_model": "en_core_web_md", "ner": {"model": "models/my-ner"}},
            ["en_core_web_md", "models/my-ner", "as its owner grants"],
            ["Rampart"],
        ),
        ({"backend": "google_dlp"}, [], ["## PI detection models"]),
    ],
    ids=["default", "rampart", "ner-off", "own-ner", "dlp-only"],
)
def test_the_card_attributes_the_models_that_detected_pi(
    anonymize: dict[str, Any], named: list[str], *, absent: list[str]
) -> None:
    from components.anonymize import detection_models

    facts = passed_card_facts(detection_models(anonymize))
    text = adapter_card(facts)
    for fragment in named:
        assert fragment in text, fragment
    for fragment in absent:
        assert fragment not in text, fragment


def test_the_registered_adapter_carries_the_card_not_peft_template(
    client: Any, lora_adapter_dir: Path, *, base: BaseModel, tmp_path: Path
) -> None:
    import mlflow

    template = (lora_adapter_dir / "README.md").read_text()
    assert template.count(PEFT_TEMPLATE) >= 10  # what save_pretrained writes beside an adapter
    version = register(client, lora_adapter_dir, base=base, utility=0.3)
    model = Path(mlflow.artifacts.download_artifacts(f"models:/m/{version.version}"))
    [readme] = [p for p in model.rglob("README.md")]
    # The adapter's weights only: the base model is logged once, apart, and shared.
    assert [p.name for p in model.rglob("*.safetensors")] == ["adapter_model.safetensors"]
    assert readme.relative_to(model).as_posix() == "artifacts/adapter/README.md"
    text = readme.read_text()
    assert PEFT_TEMPLATE not in text
    assert text.startswith("# m: a LoRA adapter trained by veiltune")
    assert "- residual-risk gate: passed" in text
    assert (lora_adapter_dir / "README.md").read_text() == template  # the adapter left as it was
    logged = {
        p.relative_to(model / "artifacts" / "adapter").as_posix() for p in readme.parent.rglob("*")
    }
    assert {
        p.relative_to(lora_adapter_dir).as_posix() for p in lora_adapter_dir.rglob("*")
    } == logged


def test_the_registry_shows_the_card_the_verdict_and_headline_tags(
    client: Any, lora_adapter_dir: Path, *, base: BaseModel
) -> None:
    first = register(client, lora_adapter_dir, base=base, utility=0.30)
    second = register(client, lora_adapter_dir, base=base, utility=0.35)
    model = client.get_registered_model("m")
    # The model's page: what it is for and its limits, and which version is approved.
    assert "## Intended use" in model.description and "## Limitations" in model.description
    assert f"Champion: version {second.version}" in model.description
    version = client.get_model_version("m", second.version)
    lines = version.description.splitlines()
    # The verdict first, then use and limits before the evidence.
    assert lines[0] == f"**champion**: {second.decision_reason}"
    text = version.description
    assert text.index("## Intended use") < text.index("## Limitations") < text.index("## Base")
    assert version.tags["champion"] == "yes"
    assert version.tags["gate"] == "passed, μ+σ 0.7 ≤ 5"
    assert version.tags["audits"] == "2/2 passed"
    assert version.tags["utility"] == "summary.rouge1 0.35"
    assert all(len(version.tags[k]) <= 40 for k in ("champion", "gate", "audits", "utility"))
    # The superseded champion says so where a glance looks.
    assert client.get_model_version("m", first.version).tags["champion"] == (
        f"no: superseded by v{second.version}"
    )


@pytest.mark.parametrize(
    ("train", "shown", "hidden"),
    [
        ({"method": "sft", "beta": 0.1, "only_good": False}, ["only_good"], ["beta"]),
        ({"method": "dpo", "beta": 0.1, "only_good": False}, ["beta"], ["only_good"]),
        (
            {"corpus": "anonymized", "mask_loss_weight": 1.0, "fragments": {"source": "raw"}},
            ["corpus"],
            ["mask_loss_weight", "fragments"],
        ),
        ({"corpus": "masked", "mask_loss_weight": 0.0}, ["mask_loss_weight"], []),
        ({"corpus": "fragmented", "fragments": {"source": "raw"}}, ["fragments"], []),
        ({"packing": True, "padding": "longest"}, ["packing"], ["padding"]),
    ],
)
def test_a_card_lists_only_the_training_params_that_apply(
    train: dict[str, Any], shown: list[str], *, hidden: list[str]
) -> None:
    facts = passed_card_facts(train_params=train)
    text = adapter_card(facts)
    for key in shown:
        assert f"| {key} |" in text, key
    for key in hidden:
        assert f"| {key} |" not in text, key


def passed_card_facts(detection: Any = (), train_params: Any = None) -> CardFacts:
    """A card's facts for an adapter that passed the gate (0.7 against 5) and its audits,
    summary ROUGE-1 0.3, found by the ``detection`` models, trained with ``train_params``."""
    gate = GateResult.from_metrics({"passed": True, "mu_plus_sigma": 0.7, "threshold": 5.0}, "g")
    return CardFacts(
        "m",
        BASE_MODEL,
        INGEST_METRICS,
        corpus_datasets({}, INGEST_METRICS["by_dataset"]),
        "anonymized",
        gate,
        AuditResult(True, {}),
        "summary.rouge1",
        0.3,
        detection,
        train_params or {},
    )
