"""Charts of the compliance report, as PNG bytes (no software or time metadata).

Drawn from aggregate figures only: audit figures against their thresholds, and the
adapter's scores next to the base model's (never a count: ``utility_panels`` picks the bars).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from components.export.audit_evidence import figure_axes, key_order
from components.export.facts import ThresholdPair, UtilityRow, is_count, lower_is_better

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

_PASS, _FAIL, _LIMIT = "#8da0cb", "#c62828", "#333333"


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def drawn_pairs(pairs: Sequence[ThresholdPair]) -> list[ThresholdPair]:
    """The figures worth a panel: one of all zeros is a bar of no height on an axis of
    nothing (``zero_figures`` says it in words instead)."""
    return [p for p in pairs if any(v != 0 for v in p.values.values())]


def zero_figures(pairs: Sequence[ThresholdPair]) -> list[str]:
    """A sentence for each figure left out of the chart because every value of it is 0."""
    return [
        f"{p.audit}: {figure_axes(p.figure).value} is 0 (limit {p.limit:g}); no chart."
        for p in pairs
        if p not in drawn_pairs(pairs)
    ]


def audit_figure(pairs: Sequence[ThresholdPair]) -> Figure | None:
    """One panel per audit figure with its threshold as a line, a bar beyond it in red,
    keys in numeric order, both axes titled; None when no figure is worth a panel."""
    pairs = drawn_pairs(pairs)
    if not pairs:
        return None
    from matplotlib.figure import Figure

    columns = min(len(pairs), 3)
    rows = -(-len(pairs) // columns)
    figure = Figure(figsize=(3.8 * columns, 3.3 * rows), dpi=100)
    for index, pair in enumerate(pairs):
        _audit_panel(figure.add_subplot(rows, columns, index + 1), pair)
    figure.tight_layout()
    return figure


def _audit_panel(axes: Axes, pair: ThresholdPair) -> None:
    labels = sorted(pair.values, key=key_order)
    values = [pair.values[k] for k in labels]
    beyond = [(v > pair.limit) if pair.upper else (v < pair.limit) for v in values]
    bars = axes.bar(range(len(values)), values, color=[_FAIL if b else _PASS for b in beyond])
    axes.bar_label(bars, fmt="%.4g", fontsize=7)
    label = f"{pair.threshold} = {pair.limit:g}"
    axes.axhline(pair.limit, color=_LIMIT, linestyle="--", linewidth=1.5, label=label)
    axes.set_xticks(range(len(values)))
    axes.set_xticklabels(labels, fontsize=7, rotation=30 if len(values) > 3 else 0)
    axes.set_ylim(0, max([*values, pair.limit]) * 1.25)
    titles = figure_axes(pair.figure)
    axes.set_ylabel(titles.value, fontsize=8)
    axes.set_xlabel(titles.keys if labels != [""] and titles.keys else pair.audit, fontsize=8)
    axes.set_title(f"{pair.audit}: {pair.figure}", fontsize=9)
    axes.legend(fontsize=7, loc="upper left")


def audit_chart_png(pairs: Sequence[ThresholdPair]) -> bytes | None:
    """``audit_figure`` as PNG bytes; None when it draws nothing."""
    figure = audit_figure(pairs)
    return None if figure is None else _png(figure)


SCORE_AXIS = "score, 0–1 (↑ higher is better)"
LOWER_AXIS = "perplexity or loss (↓ lower is better)"
UTILITY_KEYS = "metric (n = held-out examples it is over)"


def utility_panels(rows: Sequence[UtilityRow]) -> list[tuple[str, list[UtilityRow]]]:
    """The bars of the utility chart, by panel: scores (higher is better) on one axis,
    perplexity and other lower-is-better figures on their own. A count (``n_examples``,
    ``n_conversations``) is no bar: on a 0-1 score axis a 27 flattens every score to zero.
    Panels without a bar are left out."""
    scores = [r for r in rows if not is_count(r.metric)]
    panels = [
        (SCORE_AXIS, [r for r in scores if not lower_is_better(r.metric)]),
        (LOWER_AXIS, [r for r in scores if lower_is_better(r.metric)]),
    ]
    return [(label, data) for label, data in panels if data]


def utility_figure(rows: Sequence[UtilityRow]) -> Figure | None:
    """Adapter and base model side by side, in the panels of ``utility_panels``; each bar
    labelled with the number of examples its score is over, both axes titled. None when
    there is nothing to draw."""
    panels = utility_panels(rows)
    if not panels:
        return None
    from matplotlib.figure import Figure

    ratios = [len(data) + 1 for _, data in panels]
    figure = Figure(figsize=(min(12.0, 3.0 + 0.55 * sum(ratios)), 4.8), dpi=100)
    axes_list = figure.subplots(1, len(panels), gridspec_kw={"width_ratios": ratios}, squeeze=False)
    for axes, (label, data) in zip(axes_list[0], panels, strict=True):
        for offset, model in ((-0.2, "adapter"), (0.2, "base")):
            values = [getattr(r, model) for r in data]
            drawn = [(i + offset, v) for i, v in enumerate(values) if v is not None]
            if drawn:
                axes.bar([x for x, _ in drawn], [v for _, v in drawn], 0.4, label=model)
        axes.set_xticks(range(len(data)))
        axes.set_xticklabels([_tick(r) for r in data], fontsize=7, rotation=40, ha="right")
        axes.set_ylabel(label, fontsize=8)
        axes.set_xlabel(UTILITY_KEYS, fontsize=8)
        axes.legend(fontsize=7)
    figure.tight_layout()
    return figure


def utility_chart_png(rows: Sequence[UtilityRow]) -> bytes | None:
    """``utility_figure`` as PNG bytes; None when it draws nothing."""
    figure = utility_figure(rows)
    return None if figure is None else _png(figure)


def _tick(row: UtilityRow) -> str:
    return row.metric if row.n is None else f"{row.metric} (n={row.n})"
