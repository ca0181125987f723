"""Human-readable renderings of residual risk: Markdown table, histogram, HTML page.

Everything here is a pure function from data to text or bytes; writing the result to a file,
an MLflow artifact or a Prefect artifact is the caller's job. HTML pages are self-contained
(inline CSS, images as data URIs, no scripts, no external resources) so that it reads
offline, and every string that comes from data is escaped (the page is the template
``templates/report.html``, autoescaped).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components.core.html import Pages

# (summary key, column header, shown as an int when integral)
_COLUMNS = (
    ("count", "count", True),
    ("mean", "mean", False),
    ("std", "std", False),
    ("p95", "P95", False),
    ("max", "max", True),
    ("mu_plus_sigma", "μ+σ", False),
)
_HEADERS = ("context", *(header for _, header, _ in _COLUMNS), "gate")
_TOTAL = "total"
_PAGES = Pages("components.risk")

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class _TableRow:
    """One row of the risk table: a context (or the total), its figures and its gate mark."""

    label: str
    numbers: list[str]
    mark: str
    passed: bool

    @property
    def total(self) -> bool:
        return self.label == _TOTAL


def _number(value: float, integral_as_int: bool) -> str:
    if integral_as_int and float(value).is_integer():
        return str(int(value))
    return f"{float(value):.3f}"


def _gate_mark(mu_plus_sigma: float, threshold: float) -> tuple[bool, str]:
    """Whether μ+σ passes (strictly below the threshold, as the gate has it) and its mark."""
    passed = mu_plus_sigma < threshold
    return passed, f"< {threshold:g} ✓" if passed else f"≥ {threshold:g} ✗"


def _table_rows(summary: Mapping[str, Any], threshold: float) -> list[_TableRow]:
    """One row per context, sorted, then the total row."""
    by_context: Mapping[str, Mapping[str, Any]] = summary.get("by_context", {})
    labelled = [(str(name), by_context[name]) for name in sorted(by_context)]
    rows = []
    for label, stats in [*labelled, (_TOTAL, summary)]:
        numbers = [_number(stats[key], as_int) for key, _, as_int in _COLUMNS]
        passed, mark = _gate_mark(float(stats["mu_plus_sigma"]), threshold)
        rows.append(_TableRow(label, numbers, mark, passed))
    return rows


def _markdown_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def risk_table_markdown(summary: Mapping[str, Any], threshold: float) -> str:
    """Residual risk per context and in total as a Markdown table.

    Args:
        summary: what ``components.risk.scoring.summarize_risk`` returns.
        threshold: the gate threshold; the last column says whether μ+σ is below it.
    """
    lines = [
        "| " + " | ".join(_HEADERS) + " |",
        "|---|" + "---:|" * len(_COLUMNS) + ":---:|",
    ]
    for row in _table_rows(summary, threshold):
        name = f"**{row.label}**" if row.total else _markdown_cell(row.label)
        lines.append("| " + " | ".join([name, *row.numbers, row.mark]) + " |")
    return "\n".join(lines) + "\n"


def _integer_bins(scores: Sequence[int]) -> list[float]:
    low, high = (min(scores), max(scores)) if scores else (0, 0)
    return [edge - 0.5 for edge in range(int(low), int(high) + 2)]


# The names the risk table's source column holds (components.risk.corpus), in words.
SOURCE_WORDS = {"ground_truth": "ground truth", "estimate": "estimator"}
HISTOGRAM_X = "residual risk score per conversation (0–5)"
HISTOGRAM_Y = "conversations (log scale)"


def risk_histogram_figure(
    scores: Sequence[int],
    threshold: float,
    *,
    mean: float,
    std: float,
    sources: Sequence[str] | None = None,
) -> Figure:
    """Histogram of per-conversation risk scores, stacked by the source that scored each
    (``sources``, one per score, when given), with the mean, μ+σ and the threshold marked.
    The count axis is logarithmic: a few risky conversations among hundreds at 0 show."""
    # Imported here so that importing this module stays cheap and never picks a GUI backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(7, 4), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    groups = _by_source(scores, sources)
    axes.hist(
        list(groups.values()),
        bins=_integer_bins(scores),
        stacked=True,
        log=bool(scores),  # no scores: nothing to put on a log axis
        color=_SOURCE_COLOURS[: len(groups)],
        edgecolor="#4a5a8a",
        label=[f"{SOURCE_WORDS.get(n, n)} ({len(v)})" for n, v in groups.items()],
    )
    axes.axvline(mean, color="#333333", linestyle="-", label=f"mean = {mean:.3f}")
    axes.axvline(mean + std, color="#e78a00", linestyle="--", label=f"μ+σ = {mean + std:.3f}")
    axes.axvline(threshold, color="#c62828", linestyle=":", label=f"threshold = {threshold:g}")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel(HISTOGRAM_X)
    axes.set_ylabel(HISTOGRAM_Y)
    above = sum(1 for score in scores if score > 0)
    axes.set_title(f"Residual risk ({len(scores)} conversations, {above} above 0)")
    axes.legend(fontsize=8)
    figure.tight_layout()
    return figure


_SOURCE_COLOURS = ["#8da0cb", "#fc8d62", "#66c2a5"]


def _by_source(scores: Sequence[int], sources: Sequence[str] | None) -> dict[str, list[int]]:
    if sources is None:
        return {"all": list(scores)}
    groups: dict[str, list[int]] = {}
    for score, source in zip(scores, sources, strict=True):
        groups.setdefault(str(source), []).append(int(score))
    return dict(sorted(groups.items())) or {"all": []}


def risk_histogram_png(
    scores: Sequence[int],
    threshold: float,
    *,
    mean: float,
    std: float,
    sources: Sequence[str] | None = None,
) -> bytes:
    """``risk_histogram_figure`` as PNG bytes. The PNG carries no software or time
    metadata, so identical input gives identical bytes."""
    figure = risk_histogram_figure(scores, threshold, mean=mean, std=std, sources=sources)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def risk_sources_statement(summary: Mapping[str, Any]) -> str:
    """Which source scored how many conversations, and, where the estimator scored some,
    its recall measured on the conversations ground truth scored (``estimator_agreement``
    of metrics/risk.json). Plain text."""
    truth, estimate = int(summary.get("n_ground_truth") or 0), int(summary.get("n_estimate") or 0)
    total = truth + estimate
    if not estimate:
        return f"All {total} conversations scored by ground truth (the corpus's labelled PI)."
    said = (
        f"{truth} of {total} conversations scored by ground truth (the corpus's labelled PI), "
        f"{estimate} by the automatic estimator (no labels: it guesses what leaked)."
    )
    agreement = summary.get("estimator_agreement")
    if not isinstance(agreement, Mapping) or agreement.get("recall") is None:
        return said + " The estimator's recall was not measured: no conversation is labelled."
    recall = float(agreement["recall"])
    said += (
        f" Measured on the {truth} labelled conversations, the estimator found "
        f"{recall:.0%} of the leaked values ground truth knows (recall {recall:.2f})"
    )
    if agreement.get("conversation_recall") is not None:
        said += (
            f" and {float(agreement['conversation_recall']):.0%} of the conversations that leaked"
        )
    return said + ": its scores can understate the risk of the conversations it scored."


def _source_rows(summary: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """One row per source (the full summary's ``by_source``), in words."""
    by_source: Mapping[str, Mapping[str, Any]] = summary.get("by_source") or {}
    return [
        (SOURCE_WORDS.get(name, name), [_number(stats[k], as_int) for k, _, as_int in _COLUMNS])
        for name, stats in sorted(by_source.items())
    ]


def risk_report_html(
    summary: Mapping[str, Any],
    threshold: float,
    *,
    histogram_png: bytes,
    title: str = "Residual risk",
) -> str:
    """One self-contained HTML page: the gate statement, which source scored how many
    conversations (and the estimator's recall), the risk table per context and per source,
    and the histogram."""
    passed, _ = _gate_mark(float(summary["mu_plus_sigma"]), threshold)
    return _PAGES.render(
        "report.html",
        title=title,
        passed=passed,
        mu_plus_sigma=f"{float(summary['mu_plus_sigma']):.3f}",
        threshold=f"{threshold:g}",
        headers=_HEADERS,
        rows=_table_rows(summary, threshold),
        histogram_png=histogram_png,
        sources=risk_sources_statement(summary),
        source_headers=("source", *(header for _, header, _ in _COLUMNS)),
        source_rows=_source_rows(summary),
    )
