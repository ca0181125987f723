"""Charts of the compliance report, as PNG bytes (no software or time metadata).

Drawn from aggregate figures only: audit figures against their thresholds, and the
adapter's scores next to the base model's.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from components.export.facts import ThresholdPair, lower_is_better

_PASS, _FAIL, _LIMIT = "#8da0cb", "#c62828", "#333333"


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def audit_chart_png(pairs: Sequence[ThresholdPair]) -> bytes | None:
    """One panel per audit figure with its threshold as a line; a bar beyond it in red.
    None when no audit has a figure with a numeric threshold."""
    if not pairs:
        return None
    from matplotlib.figure import Figure

    columns = min(len(pairs), 3)
    rows = -(-len(pairs) // columns)
    figure = Figure(figsize=(3.6 * columns, 3.0 * rows), dpi=100)
    for index, pair in enumerate(pairs):
        axes = figure.add_subplot(rows, columns, index + 1)
        labels = list(pair.values)
        values = list(pair.values.values())
        beyond = [(v > pair.limit) if pair.upper else (v < pair.limit) for v in values]
        bars = axes.bar(range(len(values)), values, color=[_FAIL if b else _PASS for b in beyond])
        axes.bar_label(bars, fmt="%.4g", fontsize=7)
        label = f"{pair.threshold} = {pair.limit:g}"
        axes.axhline(pair.limit, color=_LIMIT, linestyle="--", linewidth=1.5, label=label)
        axes.set_xticks(range(len(values)))
        axes.set_xticklabels(labels, fontsize=7, rotation=30 if len(values) > 3 else 0)
        axes.set_ylim(0, max([*values, pair.limit]) * 1.25 or 1.0)  # counts of 0: a 0-1 axis
        axes.set_title(f"{pair.audit}: {pair.figure}", fontsize=9)
        axes.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    return _png(figure)


def utility_chart_png(rows: Sequence[tuple[str, float | None, float | None]]) -> bytes | None:
    """Adapter and base model side by side: scores (higher is better) on the left, perplexity
    and other lower-is-better figures on the right. None when there is nothing to draw."""
    if not rows:
        return None
    higher = [r for r in rows if not lower_is_better(r[0])]
    lower = [r for r in rows if lower_is_better(r[0])]
    from matplotlib.figure import Figure

    panels = [(higher, "score (higher is better)"), (lower, "lower is better")]
    panels = [(data, label) for data, label in panels if data]
    ratios = [len(data) + 1 for data, _ in panels]
    figure = Figure(figsize=(min(12.0, 3.0 + 0.55 * sum(ratios)), 4.5), dpi=100)
    axes_list = figure.subplots(1, len(panels), gridspec_kw={"width_ratios": ratios}, squeeze=False)
    for axes, (data, label) in zip(axes_list[0], panels, strict=True):
        for offset, column, model in ((-0.2, 1, "adapter"), (0.2, 2, "base")):
            drawn = [(i + offset, r[column]) for i, r in enumerate(data) if r[column] is not None]
            if drawn:
                axes.bar([x for x, _ in drawn], [v for _, v in drawn], 0.4, label=model)
        axes.set_xticks(range(len(data)))
        axes.set_xticklabels([r[0] for r in data], fontsize=7, rotation=40, ha="right")
        axes.set_ylabel(label, fontsize=8)
        axes.legend(fontsize=7)
    figure.tight_layout()
    return _png(figure)
