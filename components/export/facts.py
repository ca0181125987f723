"""The facts the compliance report and the model card state, read out of stage metrics.

Plain functions from the metrics dicts to rows; the HTML report and the model card render
the same rows, so they cannot disagree. Audits are read generically: any audit name, any
figures and thresholds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from components.anonymize import DetectionModel, detection_models
from components.core.audit_record import bound_figure
from components.ingest import DatasetSource, corpus_datasets

CHAMPION = "champion"
# A key with a part named so counts examples or conversations; it measures nothing.
_COUNT_PREFIXES = ("n_",)


@dataclass(frozen=True)
class AuditRow:
    name: str
    passed: bool | None
    figures: Mapping[str, Any] = field(default_factory=dict)
    thresholds: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ThresholdPair:
    """One figure of an audit and the threshold it is held to (``max_x`` bounds ``x``)."""

    audit: str
    figure: str
    values: Mapping[str, float]  # one value ("": the figure itself) or one per key
    threshold: str
    limit: float

    @property
    def upper(self) -> bool:
        return self.threshold.startswith("max_")


@dataclass(frozen=True)
class Decision:
    champion: bool
    reason: str
    model_name: str
    model_version: str
    aliases: tuple[str, ...]
    aliases_source: str
    champion_version: str | None


def audit_rows(audit: Mapping[str, Any]) -> list[AuditRow]:
    """One row per audit, from ``{"audits": {name: {passed, figures, thresholds}}}`` or the
    older flat shape ``{name: {passed, max_*, ...}}``."""
    audits = audit.get("audits")
    if isinstance(audits, Mapping):
        return [
            AuditRow(
                str(name),
                _bool(body.get("passed")),
                dict(body.get("figures") or {}),
                dict(body.get("thresholds") or {}),
            )
            for name, body in sorted(audits.items())
            if isinstance(body, Mapping)
        ]
    rows = []
    for name, body in sorted(audit.items()):
        if not isinstance(body, Mapping) or "passed" not in body:
            continue
        limits = {k: v for k, v in body.items() if k.startswith(("max_", "min_"))}
        figures = {k: v for k, v in body.items() if k != "passed" and k not in limits}
        rows.append(AuditRow(str(name), _bool(body["passed"]), figures, limits))
    return rows


PLAIN_SIGHT = "plain_sight"
PLAIN_SIGHT_INTRO = (
    "Hiding in plain sight: how well an attacker tells the real names anonymization missed "
    "from the other name-like words of the same training conversations (surrogates, other "
    "capitalized words), by each word's rarity in the corpus and by the base model's "
    "surprise at it; ROC AUC, 0.5 = the real names hide, 1.0 = each stands out. "
    "Reported, not held to a threshold."
)
PLAIN_SIGHT_COLUMNS = (
    "view",
    "conversations",
    "name-like words",
    "real name words",
    "real words alone",
    "rarity AUC",
    "LM AUC",
)
_PLAIN_SIGHT_FIGURES = (
    "n_conversations",
    "n_words",
    "n_real_words",
    "real_only_share",
    "rarity_auc",
    "lm_auc",
)


def plain_sight_rows(audit: Mapping[str, Any]) -> list[list[Any]]:
    """The plain-sight audit, one row per view (the corpus as anonymized, and with its
    surrogates back to placeholders), in ``PLAIN_SIGHT_COLUMNS``' order; none when it did
    not run or had nothing to measure (its ``not_computed`` figure says why)."""
    figures = plain_sight_figures(audit)
    return [
        [view, *(values.get(key) for key in _PLAIN_SIGHT_FIGURES)]
        for view, values in figures.items()
        if isinstance(values, Mapping)
    ]


def plain_sight_figures(audit: Mapping[str, Any]) -> Mapping[str, Any]:
    """The plain-sight audit's figures in ``metrics/audit.json``, or none."""
    body = (audit.get("audits") or {}).get(PLAIN_SIGHT)
    return (body.get("figures") or {}) if isinstance(body, Mapping) else {}


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def threshold_pairs(row: AuditRow) -> list[ThresholdPair]:
    """The figure of an audit that each numeric threshold names: ``max_x`` bounds the figure
    ``x``, else the shortest named ``<prefix>_x`` (``max_auc`` → ``mia_auc``, ``max_leaks``
    → ``n_leaks``); a mapping figure gives one value per key (exposure per repetition)."""
    pairs = []
    for threshold, limit in sorted(row.thresholds.items()):
        figure = bound_figure(threshold, row.figures) if _is_number(limit) else None
        if figure is not None:
            values = _numeric_values(row.figures[figure])
            pairs.append(ThresholdPair(row.name, figure, values, threshold, float(limit)))
    return pairs


def _numeric_values(value: Any) -> dict[str, float]:
    if _is_number(value):
        return {"": float(value)}
    if isinstance(value, Mapping):
        return {str(k): float(v) for k, v in value.items() if _is_number(v)}
    return {}


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def flat_numbers(values: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """The numeric leaves of a nested dict as ``a.b`` keys (booleans left out)."""
    flat: dict[str, float] = {}
    for key, value in values.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if _is_number(value):
            flat[name] = float(value)
        elif isinstance(value, Mapping):
            flat.update(flat_numbers(value, name))
    return flat


Bounds = tuple[float, float]


@dataclass(frozen=True)
class UtilityRow:
    """One score of the adapter and the base model, and how many examples it is over
    (``n``: the task's examples, or the dataset's conversations for perplexity), with the
    95% bootstrap intervals evaluate recorded for it (None where it recorded none): each
    model's, and the paired difference adapter − base's."""

    metric: str
    adapter: float | None
    base: float | None
    n: int | None
    adapter_interval: Bounds | None = None
    base_interval: Bounds | None = None
    delta_interval: Bounds | None = None

    @property
    def delta(self) -> float | None:
        return None if self.adapter is None or self.base is None else self.adapter - self.base


def is_count(metric: str) -> bool:
    """Whether a flattened key counts rather than scores (a part named ``n_…``, as in
    ``dialogsum.n_examples.summary``): a count is never a score, on an axis or in a table."""
    return any(part.startswith(_COUNT_PREFIXES) for part in metric.split("."))


def utility_rows(
    evaluate: Mapping[str, Any], intervals: Mapping[str, Any] | None = None
) -> list[UtilityRow]:
    """Every score either model has, with the count it is over and its intervals; counts
    are never rows.

    Args:
        intervals: ``data/evaluate/intervals.json``'s ``metrics`` (every score's), when it
            was read; the headline scores' in ``metrics/evaluate.json`` serve without it.
    """
    adapter = flat_numbers(evaluate.get("adapter") or {})
    base = flat_numbers(evaluate.get("base") or {})
    recorded = {**(evaluate.get("intervals") or {}), **(intervals or {})}
    keys = sorted(k for k in set(adapter) | set(base) if not is_count(k))
    return [
        UtilityRow(
            k,
            adapter.get(k),
            base.get(k),
            _score_count(k, evaluate, adapter=adapter, base=base),
            *_row_intervals(recorded.get(k)),
        )
        for k in keys
    ]


def _row_intervals(entry: Any) -> tuple[Bounds | None, Bounds | None, Bounds | None]:
    found = entry if isinstance(entry, Mapping) else {}
    names = ("adapter", "base", "adapter_minus_base")
    adapter, base, delta = (interval_bounds(found.get(name)) for name in names)
    return adapter, base, delta


def interval_bounds(interval: Any) -> Bounds | None:
    """``(low, high)`` of an interval as evaluate records it; None when it is absent or not
    numbers."""
    if not isinstance(interval, Mapping):
        return None
    low, high = interval.get("low"), interval.get("high")
    if _is_number(low) and _is_number(high):
        return float(low), float(high)
    return None


def with_interval(value: float | None, bounds: Bounds | None, *, signed: bool = False) -> Any:
    """A score for a table cell: ``0.322 [0.277, 0.368]`` (3 significant digits, as the
    verdict states them) when it has an interval, the value itself otherwise."""
    if value is None or bounds is None:
        return value
    shown = f"{value:+.3g}" if signed else f"{value:.3g}"
    return f"{shown} [{bounds[0]:.3g}, {bounds[1]:.3g}]"


def _score_count(
    metric: str,
    evaluate: Mapping[str, Any],
    *,
    adapter: Mapping[str, float],
    base: Mapping[str, float],
) -> int | None:
    """``[dataset.]n_examples.<task>`` for a task's score (``[dataset.]<task>.<score>``),
    else the dataset's ``[dataset.]n_conversations`` (perplexity is over every held-out
    conversation). Both models are scored on the same examples: the adapter's count first."""
    head = metric.split(".")[:-1]
    candidates = [".".join([*head, "n_conversations"])]
    if head:
        candidates.insert(0, ".".join([*head[:-1], "n_examples", head[-1]]))
    for key in candidates:
        for source in (adapter, base, evaluate):
            value = source.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return int(value)
    return None


def lower_is_better(metric: str) -> bool:
    return "perplexity" in metric or metric.endswith(("loss", "_error"))


def failed_audits(rows: list[AuditRow]) -> list[str]:
    return [row.name for row in rows if row.passed is False]


def decision(
    register: Mapping[str, Any],
    registry: Mapping[str, Any],
    *,
    gate: Mapping[str, Any],
    audit: Mapping[str, Any],
    train_corpus: str,
) -> Decision:
    """Whether the registered version is champion, and why (``decision_reason`` of the
    register stage when it gives one, else read from the gate, the audits and the corpus).

    Args:
        registry: ``model_name``, ``model_version``, ``aliases`` as the registry holds them
            now, ``aliases_source``, and ``champion_version`` (whoever holds the alias).
    """
    aliases = tuple(str(a) for a in registry.get("aliases", register.get("aliases", [])))
    champion = CHAMPION in aliases
    reason = register.get("decision_reason") or _derived_reason(
        gate, audit, train_corpus=train_corpus
    )
    return Decision(
        champion=champion,
        reason=str(reason),
        model_name=str(registry.get("model_name", register.get("model_name", ""))),
        model_version=str(registry.get("model_version", register.get("model_version", ""))),
        aliases=aliases,
        aliases_source=str(registry.get("aliases_source", "metrics/register.json")),
        champion_version=_optional_str(registry.get("champion_version")),
    )


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _derived_reason(gate: Mapping[str, Any], audit: Mapping[str, Any], *, train_corpus: str) -> str:
    if train_corpus != "anonymized":
        return (
            f"trained on the {train_corpus} corpus: a baseline for the utility report, "
            "registered as a candidate and never promoted"
        )
    if not gate.get("passed"):
        return "the corpus failed the residual-risk gate"
    failed = failed_audits(audit_rows(audit))
    if not audit.get("passed"):
        return "failed audit(s): " + (", ".join(failed) if failed else "the leakage audit")
    return "the corpus passed the residual-risk gate and the model passed every audit"


def format_value(value: Any) -> str:
    """A figure for a table cell: floats to 4 significant digits, mappings as ``k: v``."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(format_value(v) for v in value) or "none"
    return "–" if value is None else str(value)


@dataclass(frozen=True)
class ExportFacts:
    """Everything the report and the model card state, as the export stage gathered it.

    Attributes:
        metrics: stage name → its ``metrics/<stage>.json``.
        params: the whole of params.yaml.
        registry: the registered version as the registry holds it now (see ``decision``).
        lineage: ``git_commit``, ``dvc_lock_sha256``, ``params_hash``, ``mlflow`` run ids.
        policy: the anonymization policy as bundled: ``exclusions`` (type → number of terms)
            and ``dictionaries`` (type → ``{"sha256", "n_terms"}``).
        review: ``n_records`` of the review sample and ``residual_masked`` (type → count).
        adapter_config: the LoRA adapter's ``adapter_config.json``, when there is one.
        utility_report: ``reports/utility/utility.json``, when it was made.
        utility_intervals: every utility score's 95% intervals (``metrics`` of
            ``data/evaluate/intervals.json``), when evaluate wrote them.
    """

    metrics: Mapping[str, Mapping[str, Any]]
    params: Mapping[str, Any]
    registry: Mapping[str, Any]
    lineage: Mapping[str, Any]
    policy: Mapping[str, Any] = field(default_factory=dict)
    review: Mapping[str, Any] = field(default_factory=dict)
    adapter_config: Mapping[str, Any] | None = None
    utility_report: Mapping[str, Any] | None = None
    utility_intervals: Mapping[str, Any] | None = None

    def stage(self, name: str) -> Mapping[str, Any]:
        return self.metrics.get(name) or {}

    def decision(self) -> Decision:
        corpus = str((self.params.get("train") or {}).get("corpus", "anonymized"))
        return decision(
            self.stage("register"),
            self.registry,
            gate=self.stage("gate"),
            audit=self.stage("audit"),
            train_corpus=corpus,
        )

    def datasets(self) -> list[DatasetSource]:
        """Every dataset of the training data, with its source, licence and conversations."""
        counts = self.stage("ingest").get("by_dataset")
        ingest = self.params.get("ingest") or {}
        return corpus_datasets(ingest, counts if isinstance(counts, Mapping) else None)

    def detection_models(self) -> list[DetectionModel]:
        """The models that found the PI anonymize removed, with their sources and licences."""
        return detection_models(self.params.get("anonymize") or {})

    def removed_by_type(self) -> Mapping[str, Any]:
        """Spans the anonymizer replaced, per info type (either name the metrics use)."""
        anonymize = self.stage("anonymize")
        found = anonymize.get("spans_by_type") or anonymize.get("replacements_by_type") or {}
        return dict(found)
