"""The model card a registered model carries as its adapter's ``README.md``, in place of the
empty template peft writes beside the adapter.

The full card (the export stage's ``model_card.md``) states the registered version, its
aliases and the compliance bundle, none of which exists until register has run: export runs
after it. This one states what register knows when it logs the model: the base model, the
training data with each dataset's source and licence, the models that detected the PI its
anonymization removed with theirs, the gate's and the audits' verdicts, and the utility the
promotion rule judged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from components.anonymize import DetectionModel
from components.core.model_use import INTENDED_USE, applicable_train_params
from components.gate import GateResult
from components.ingest import DatasetSource, mixed_in_statement
from components.register.registry import (
    CANDIDATE,
    CHAMPION,
    PRODUCT_CORPUS,
    AuditResult,
    champion_version,
)

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

INTRO = (
    "A LoRA adapter (PEFT) fine-tuned by veiltune on conversations that were anonymized "
    "before training, registered in MLflow with the privacy evidence below. The MLflow "
    "pyfunc model loads it on its base model."
)
LIMITS = """\
- Whoever uses this adapter takes on the terms of every dataset above.
- Anonymization is statistical: what it missed is in the training data; the gate bounds its
  mean and spread, not each value. The audits probe the model with a sample of prompts: a
  pass is evidence against memorization, not proof of its absence.
- The full model card, the compliance report and the signed manifest are in the compliance
  bundle (`veiltune export`), which records the manifest's sha256 and signature on this
  version (its `bundle.*` tags)."""


@dataclass(frozen=True)
class CardFacts:
    """What the card states, as register read it."""

    model_name: str
    base_model: Mapping[str, Any]  # metrics/base_model.json
    ingest: Mapping[str, Any]  # metrics/ingest.json
    datasets: Sequence[DatasetSource]
    corpus: str  # train.corpus
    gate: GateResult
    audit: AuditResult
    utility_metric: str
    utility: float
    detection_models: Sequence[DetectionModel] = ()  # what found the PI anonymize removed
    train_params: Mapping[str, Any] = field(default_factory=dict)  # params.yaml's `train`
    privacy: str = ""  # what DP training claims (:func:`privacy_claim`), empty without it


def adapter_card(facts: CardFacts) -> str:
    """The card as Markdown: what the model is for and its limits first, then its evidence."""
    sections = [
        f"# {facts.model_name}: a LoRA adapter trained by veiltune",
        INTRO,
        *_use_and_limits(),
        "## Base model\n\n" + _base_model(facts.base_model),
        "## Training data\n\n" + _training_data(facts),
        *_detection(facts.detection_models),
        "## Privacy evidence at registration\n\n"
        + _evidence(facts.gate, facts.audit, privacy=facts.privacy),
        f"## Utility\n\n- {facts.utility_metric}: {facts.utility:g} on held-out raw "
        "conversations (`metrics/evaluate.json`; every score is an `eval.*` tag of the version)",
        *_training_params(facts.train_params),
    ]
    return "\n\n".join(sections) + "\n"


def version_description(card: str, champion: bool, *, reason: str) -> str:
    """A registry version's description: its promotion verdict and why, then its card."""
    return f"**{CHAMPION if champion else CANDIDATE}**: {reason}\n\n{card}"


def model_description(model_name: str, champion: str | None, *, reason: str) -> str:
    """The registered model's description: which version is approved and why, what the
    model is for and its limits (each version's description holds its own card)."""
    held = (
        f"Champion: version {champion} ({reason})."
        if champion is not None
        else "No version holds `champion`: none is approved for use yet."
    )
    sections = [f"# {model_name}: LoRA adapters trained by veiltune", held, INTRO]
    return "\n\n".join([*sections, *_use_and_limits()]) + "\n"


def _use_and_limits() -> list[str]:
    return ["## Intended use\n\n" + INTENDED_USE.rstrip(), "## Limitations\n\n" + LIMITS]


def _training_params(train: Mapping[str, Any]) -> list[str]:
    """The ``train`` params that applied to this run, as a table (none when not given)."""
    params = applicable_train_params(train)
    if not params:
        return []
    rows = [f"| {key} | {value} |" for key, value in params.items()]
    table = "\n".join(["| param | value |", "| --- | --- |", *rows])
    return ["## Training parameters (`train` in params.yaml)\n\n" + table]


def _base_model(metrics: Mapping[str, Any]) -> str:
    lines = [f"- source: {metrics.get('source', 'unknown')}"]
    if metrics.get("model_type"):
        lines.append(f"- architecture: {metrics['model_type']}")
    if isinstance(metrics.get("n_parameters"), int):
        lines.append(f"- parameters: {metrics['n_parameters']:,}")
    return "\n".join(lines)


def _training_data(facts: CardFacts) -> str:
    if facts.corpus == PRODUCT_CORPUS:
        text = "the anonymized text of the training split (`train.corpus: anonymized`)"
    else:
        text = (
            f"the {facts.corpus} text of the training split (`train.corpus: {facts.corpus}`): "
            "a baseline for comparison, never promoted to champion"
        )
    ingest = facts.ingest
    lines = [
        f"- trained on: {text}",
        f"- conversations: {ingest.get('n_conversations', '?')} ({ingest.get('n_train', '?')} "
        f"train, {ingest.get('n_heldout', '?')} held out)",
        "- datasets:",
    ]
    for dataset in facts.datasets:
        n = dataset.n_conversations
        count = "" if n is None else f" ({n} conversations)"
        lines.append(
            f"  - {dataset.title}{count}. Source: {dataset.source}. Licence: {dataset.licence}."
        )
    lines.append(f"- {mixed_in_statement(facts.datasets)}")
    return "\n".join(lines)


def _detection(models: Sequence[DetectionModel]) -> list[str]:
    """The section naming the models that found the PI, with their licences (none without
    models: a DLP-only run)."""
    if not models:
        return []
    lines = ["Models that found the personal information anonymization removed:"]
    for model in models:
        lines.append(
            f"- {model.role}: {model.title}. Source: {model.source}. Licence: {model.licence}."
        )
    return ["## PI detection models\n\n" + "\n".join(lines)]


def privacy_claim(train: Mapping[str, Any]) -> str:
    """The guarantee DP training claims, from ``metrics/train.json`` (its ``dp.*``): the ε
    the accountant counts spent at δ, per conversation; empty for training without DP."""
    if "dp.epsilon" not in train:
        return ""
    return (
        f"(ε = {train['dp.epsilon']}, δ = {train['dp.delta']:.3g})-differential privacy per "
        f"conversation: DP-SGD, gradients clipped to {train['dp.max_grad_norm']:g}, noise "
        f"multiplier {train['dp.noise_multiplier']:g}, {train['dp.accountant']} accountant "
        f"(target ε {train['dp.target_epsilon']:g})"
    )


def _evidence(gate: GateResult, audit: AuditResult, *, privacy: str = "") -> str:
    verdict = "passed" if gate.passed else "failed"
    audits = ", ".join(
        f"{name} {'passed' if ok else 'failed'}" for name, ok in sorted(audit.audits.items())
    )
    return "\n".join(
        [
            f"- residual-risk gate: {verdict} (μ+σ {gate.mu_plus_sigma:g} against threshold "
            f"{gate.threshold:g})",
            f"- leakage audits: {'passed' if audit.passed else 'failed'}"
            + (f" ({audits})" if audits else ""),
            "- formal guarantee: "
            + (privacy or "none (train.privacy off): the evidence above is empirical"),
        ]
    )


def describe_model(client: MlflowClient, model_name: str) -> None:
    """Set the registered model's description from the version holding ``champion`` now."""
    holder = champion_version(client, model_name)
    reason = ""
    if holder is not None:
        tags = holder.tags
        reason = tags.get("forced_promotion_reason") or tags.get("promotion_reason", "")
    version = str(holder.version) if holder is not None else None
    client.update_registered_model(
        model_name, description=model_description(model_name, version, reason=reason)
    )
