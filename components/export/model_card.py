"""The model card of the registered adapter, in Markdown, from the facts of one export."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from components.core.html import Pages
from components.core.model_use import INTENDED_USE, applicable_train_params
from components.export.audit_evidence import audit_evidence
from components.export.facts import (
    PLAIN_SIGHT_COLUMNS,
    PLAIN_SIGHT_INTRO,
    ExportFacts,
    audit_rows,
    format_value,
    plain_sight_figures,
    plain_sight_rows,
    utility_rows,
    with_interval,
)
from components.ingest import DATASET, MAIN, mixed_in_statement

_PAGES = Pages("components.export")
_ADAPTER_KEYS = ("peft_type", "task_type", "r", "lora_alpha", "lora_dropout", "target_modules")
_TRAIN_RESULT_KEYS = (
    "steps",
    "train_loss",
    "n_examples",
    "n_sequences",
    "trainable_parameters",
    "total_parameters",
    "tokens_per_second",
    "runtime_s",
    "engine",
)


def _cell(value: Any) -> str:
    return format_value(value).replace("|", "\\|").replace("\n", " ")


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _bullets(items: Iterable[tuple[str, Any]]) -> str:
    return "\n".join(f"- {label}: {_cell(value)}" for label, value in items)


def _details(facts: ExportFacts) -> str:
    decided = facts.decision()
    base = facts.stage("base_model")
    source = base.get("source") or (facts.params.get("base_model") or {}).get("source")
    size = f"{base.get('model_type')}, {base.get('n_parameters')} parameters"
    adapter = facts.adapter_config or {}
    return _bullets(
        [
            ("registered model", f"{decided.model_name} version {decided.model_version}"),
            ("created (UTC)", facts.lineage.get("created_at") or "not stated"),
            ("aliases", f"{format_value(list(decided.aliases))} (from {decided.aliases_source})"),
            ("champion", f"{'yes' if decided.champion else 'no'}: {decided.reason}"),
            ("base model", source),
            ("base model type and size", size),
            *((f"adapter {key}", adapter.get(key)) for key in _ADAPTER_KEYS if key in adapter),
        ]
    )


def _dp_keys(results: Mapping[str, Any]) -> list[str]:
    """DP training's figures (``dp.epsilon`` spent, ``dp.delta``...), where it ran."""
    return sorted(key for key in results if key.startswith("dp."))


def _training(facts: ExportFacts) -> str:
    params = facts.params.get("train") or {}
    results = facts.stage("train")
    return "\n\n".join(
        [
            "Parameters (`train` in params.yaml):",
            _table(["param", "value"], applicable_train_params(params).items()),
            "Results (`metrics/train.json`):",
            _table(
                ["figure", "value"],
                [
                    (k, results[k])
                    for k in (*_TRAIN_RESULT_KEYS, *_dp_keys(results))
                    if k in results
                ],
            ),
        ]
    )


def _datasets(facts: ExportFacts) -> str:
    """Every dataset of the training data with its source and licence."""
    return _table(
        ["dataset", "conversations", "source", "licence"],
        [(d.title, d.n_conversations, d.source, d.licence) for d in facts.datasets()],
    )


def _detection_models(facts: ExportFacts) -> list[str]:
    """The models that found the PI anonymization removed, with their licences (none in a
    DLP-only run)."""
    models = facts.detection_models()
    if not models:
        return []
    table = _table(
        ["role", "model", "source", "licence"],
        [(m.role, m.title, m.source, m.licence) for m in models],
    )
    return ["Models that found the personal information anonymization removed:", table]


def _data(facts: ExportFacts) -> str:
    ingest, risk, gate = facts.stage("ingest"), facts.stage("risk"), facts.stage("gate")
    corpus_variant = (facts.params.get("train") or {}).get("corpus", "anonymized")
    split = f"{ingest.get('n_train')} train, {ingest.get('n_heldout')} held out"
    verdict = "passed" if gate.get("passed") else "failed"
    residual = (
        f"{format_value(risk.get('mu_plus_sigma'))} against gate threshold "
        f"{format_value(gate.get('threshold'))}: gate {verdict}"
    )
    versions = facts.lineage.get("data_versions") or {}
    md5s = [
        (f"DVC md5 of {path}", md5)
        for stage in sorted(versions)
        for path, md5 in sorted(versions[stage].items())
    ]
    bullets = _bullets(
        [
            ("trained on", f"the {corpus_variant} text of the training split"),
            ("conversations", f"{format_value(ingest.get('n_conversations'))} ({split})"),
            ("contexts", ingest.get("by_context")),
            ("spans anonymized", facts.stage("anonymize").get("n_replacements")),
            ("residual risk μ+σ", residual),
            *md5s,
            ("git commit", facts.lineage.get("git_commit")),
            ("params hash", facts.lineage.get("params_hash")),
            ("dvc.lock sha256", facts.lineage.get("dvc_lock_sha256")),
        ]
    )
    intro = "Datasets of the corpus; its training and held-out splits draw on each:"
    mixed_in = mixed_in_statement(facts.datasets())
    return "\n\n".join([intro, _datasets(facts), mixed_in, bullets, *_detection_models(facts)])


def _evaluation(facts: ExportFacts) -> str:
    evaluate = facts.stage("evaluate")
    rows = utility_rows(evaluate, facts.utility_intervals)
    intro = (
        f"On {format_value(evaluate.get('n_conversations'))} held-out raw conversations "
        "(`metrics/evaluate.json`); the base model zero-shot for comparison. n: the held-out "
        "examples a score is over (conversations, for perplexity); in brackets, the 95% "
        "bootstrap interval over held-out conversations, where evaluate recorded one."
    )
    table = _table(
        ["metric", "n", "adapter", "base"],
        [
            (r.metric, r.n, with_interval(r.adapter, r.adapter_interval),
             with_interval(r.base, r.base_interval))
            for r in rows
        ],
    )  # fmt: skip
    return intro + "\n\n" + table


def _audits(facts: ExportFacts) -> str:
    audit = facts.stage("audit")
    rows = audit_rows(audit)
    if not rows:
        return "No audit results."
    said = [audit_evidence(r) for r in rows]
    table = _table(
        ["audit", "result", "evidence"], [(e.name, e.result, " ".join(e.sentences)) for e in said]
    )
    return "\n\n".join([table, *_plain_sight(audit)])


def _plain_sight(audit: Mapping[str, Any]) -> list[str]:
    """The plain-sight audit by view, or why it measured nothing; none if it did not run."""
    rows = plain_sight_rows(audit)
    if rows:
        return [PLAIN_SIGHT_INTRO, _table(PLAIN_SIGHT_COLUMNS, rows)]
    reason = plain_sight_figures(audit).get("not_computed")
    return [f"Hiding in plain sight: not measured ({reason})."] if reason else []


def _limitations(facts: ExportFacts) -> str:
    audits = ", ".join(r.name for r in audit_rows(facts.stage("audit"))) or "none"
    lines = [
        "- Anonymization is statistical: what it missed (residual risk above) is in the "
        "training data. The residual-risk gate bounds its mean and spread, not each value.",
        f"- The audits ({audits}) probe the model with a sample of prompts; a pass is "
        "evidence against memorization, not proof of its absence.",
        "- PI is matched against the inventory as exact word sequences (salted hashes): "
        "misspelled or paraphrased values, and lone common words, are not counted.",
        f"- Utility is measured on {format_value(facts.stage('evaluate').get('n_conversations'))}"
        " held-out conversations: differences of a few points are noise.",
    ]
    return "\n".join(lines + _dataset_limitations(facts))


def _dataset_limitations(facts: ExportFacts) -> list[str]:
    """What the datasets trained on mean for the figures and for the adapter's use."""
    names = {d.name for d in facts.datasets()}
    lines = []
    if MAIN in names and not (facts.params.get("ingest") or {}).get("corpus_path"):
        lines.append(
            "- Trained on the embedded synthetic corpus: every figure of the main corpus "
            "describes it, not real conversations."
        )
    if DATASET in names:
        lines.append(
            "- Trained on DialogSum (CC BY-NC-SA 4.0): this adapter derives from it, so it is "
            "for non-commercial use and shared under the same licence; set "
            "`ingest.dialogsum.append: never` to train without it."
        )
    return lines


def model_card_markdown(facts: ExportFacts) -> str:
    """The model card: details, training, data lineage, intended use, evaluation, audits and
    limitations of the registered version."""
    decided = facts.decision()
    sections = [
        f"# Model card: {decided.model_name} version {decided.model_version}",
        "## Model details\n\n" + _details(facts),
        "## Training\n\n" + _training(facts),
        "## Training data and lineage\n\n" + _data(facts),
        "## Intended use\n\n" + INTENDED_USE.rstrip(),
        "## Evaluation\n\n" + _evaluation(facts),
        "## Privacy audits\n\n" + _audits(facts),
        "## Limitations\n\n" + _limitations(facts),
    ]
    return "\n\n".join(sections) + "\n"


# Python-Markdown's parts that would pass a value's markup through or make a link of a URL:
# the card's values (model names, paths, sources) are text, and its page fetches nothing.
_MARKUP_AND_LINKS = (
    "html", "link", "autolink", "automail", "image_link", "image_reference", "reference",
    "short_reference", "short_image_ref",
)  # fmt: skip


def model_card_html(card: str, title: str) -> str:
    """``model_card_markdown``'s text as a self-contained page (``model_card.html``):
    headings, lists, tables and code as Markdown renders them; raw markup and URLs in the
    text shown as text."""
    import markdown

    renderer = markdown.Markdown(extensions=["tables"], output_format="html")
    renderer.preprocessors.deregister("html_block")
    for pattern in _MARKUP_AND_LINKS:
        renderer.inlinePatterns.deregister(pattern, strict=False)
    return _PAGES.render("model_card.html", title=title, body=renderer.convert(card))
