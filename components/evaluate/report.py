"""The privacy–utility report rendered: tables of every variant's scores with their 95%
intervals, the privacy figures beside them (gate, residual risk, audits: where they come
from named), the paired differences from the oracle, the per-seed spread, the verdict, and a
chart with error bars (the numbers come from ``components.evaluate.summary`` and
``components.evaluate.runs.privacy_section``).

The variants are runs of the one pipeline (``dvc exp run -S train.corpus=raw``), not copies
of it: the run store of ``veiltune utility-profile``, or DVC's experiments. When the corpus
includes DialogSum, its held-out dialogues get a table of their own (``dialogsum.*`` keys).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from components.evaluate.variants import BASE, MASKED, ORACLE, PLACEHOLDER, display_order

EXPECTED = (BASE, MASKED, PLACEHOLDER, ORACLE)  # rows shown, "(not run)" when missing

COLUMNS = (
    ("summary.rouge1", "summary ROUGE-1"),
    ("summary.rougeL", "summary ROUGE-L"),
    ("action_items.rouge1", "action items ROUGE-1"),
    ("purpose.macro_f1", "purpose macro-F1"),
    ("outcome.macro_f1", "outcome macro-F1"),
    ("purpose.accuracy", "purpose accuracy"),
    ("outcome.accuracy", "outcome accuracy"),
    ("perplexity_raw", "perplexity (raw, lower is better)"),
)
# The same summary task on DialogSum's held-out dialogues (human-written summaries).
DIALOGSUM_COLUMNS = (
    ("dialogsum.summary.rouge1", "ROUGE-1"),
    ("dialogsum.summary.rouge2", "ROUGE-2"),
    ("dialogsum.summary.rougeL", "ROUGE-L"),
    ("dialogsum.perplexity_raw", "perplexity (raw, lower is better)"),
)
SPREAD_METRICS = ("summary.rouge1", "perplexity_raw")  # the spread table's rows


def report_markdown(summary: Mapping[str, Any]) -> str:
    """The main corpus's table, DialogSum's when any variant was scored on it, the paired
    differences from the oracle, the per-seed spread, the verdict."""
    variants = summary["variants"]
    lines = _markdown_table(variants, COLUMNS)
    if any(DIALOGSUM_COLUMNS[0][0] in entry["metrics"] for entry in variants.values()):
        lines += ["", "DialogSum (held-out dialogues, human-written summaries):", ""]
        lines += _markdown_table(variants, DIALOGSUM_COLUMNS)
    if (summary.get("privacy") or {}).get("variants"):
        lines += ["", f"Privacy (from {summary['privacy']['source']}):", ""]
        lines += privacy_table(summary["privacy"]["variants"], variants)
    if summary["differences"]:
        lines += ["", "Difference from the oracle, variant / oracle − 1 (paired, 95% interval):"]
        lines += ["", *_differences_table(summary["differences"])]
    if any(entry["spread"] for entry in variants.values()):
        lines += ["", "Per-seed means (each seed on its own conversations):", ""]
        lines += _spread_table(variants)
    lines += ["", *(_verdict_line(check) for check in summary["comparison"].values())]
    return "\n".join(lines) + "\n"


def _markdown_table(
    variants: Mapping[str, Mapping[str, Any]], columns: Sequence[tuple[str, str]]
) -> list[str]:
    header = "| variant | run | seeds | " + " | ".join(label for _, label in columns) + " |"
    lines = [header, "|---|---|---:|" + "---:|" * len(columns)]
    for variant in display_order({*EXPECTED, *variants}):
        if variant not in variants:
            lines.append(f"| {variant} | (not run) | |" + " |" * len(columns))
            continue
        entry = variants[variant]
        cells = [
            _cell(entry["metrics"].get(key), entry["intervals"].get(key)) for key, _ in columns
        ]
        seeds = len(entry["seeds"])
        lines.append(f"| {variant} | {entry['run']} | {seeds} | " + " | ".join(cells) + " |")
    return lines


def privacy_table(
    privacy: Mapping[str, Mapping[str, Any]], variants: Mapping[str, Any]
) -> list[str]:
    """Each trained variant's gate (μ+σ as mean + std, against the threshold), residual
    risk, and audits (verdict, then each attack's figure); "–" where a run has none."""
    header = [label for _, label in PRIVACY_COLUMNS]
    lines = ["| variant | " + " | ".join(header) + " |", "|---|" + "---:|" * len(header)]
    for variant in display_order({*EXPECTED, *variants, *privacy} - {BASE}):
        if variant not in variants and variant not in privacy:
            lines.append(f"| {variant} | (not run) |" + " |" * (len(header) - 1))
            continue
        figures = privacy.get(variant) or {}
        cells = [render(figures) for render, _ in PRIVACY_COLUMNS]
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return lines


def _gate_cell(figures: Mapping[str, Any]) -> str:
    values = [figures.get(f"gate.{k}") for k in ("mu_plus_sigma", "mean", "std", "threshold")]
    if not all(isinstance(v, int | float) for v in values):
        return "–"
    total, mean, std, threshold = values
    return f"{total:.3f} ({mean:.3f} + {std:.3f}) vs {threshold:g}"


def _verdict_cell(passed: Any, failed: Sequence[str] = ()) -> str:
    if passed is None:
        return "–"
    return "passed" if passed else "failed" + (f": {', '.join(failed)}" if failed else "")


def _number_cell(value: Any, digits: int = 3) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "–"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def _risk_cell(figures: Mapping[str, Any]) -> str:
    cells = [_number_cell(figures.get(f"risk.{k}"), 2) for k in ("mean", "p95", "max")]
    return "–" if cells == ["–"] * 3 else " / ".join(cells)


PRIVACY_COLUMNS: tuple[tuple[Callable[[Mapping[str, Any]], str], str], ...] = (
    (_gate_cell, "gate μ+σ (mean + std) vs threshold"),
    (lambda f: _verdict_cell(f.get("gate.passed")), "gate"),
    (_risk_cell, "residual risk mean / p95 / max"),
    (lambda f: _verdict_cell(f.get("audit.passed"), f.get("audit.failed") or ()), "audits"),
    (lambda f: _number_cell(f.get("audit.pii_output.n_leaks")), "PI leaks in outputs"),
    (lambda f: _number_cell(f.get("audit.canary.max_exposure")), "max canary exposure (bits)"),
    (lambda f: _number_cell(f.get("audit.extraction.extraction_rate")), "extraction rate"),
    (lambda f: _number_cell(f.get("audit.membership.mia_auc")), "membership AUC"),
)


def _cell(value: Any, interval: Sequence[float] | None) -> str:
    if not isinstance(value, int | float):
        return "–"
    return f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


def _differences_table(differences: Mapping[str, Mapping[str, Any]]) -> list[str]:
    keys = [key for key, _ in (*COLUMNS, *DIALOGSUM_COLUMNS)]
    keys = [k for k in keys if any(k in found for found in differences.values())]
    lines = ["| variant | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for variant in display_order(differences):
        cells = [
            _relative_cell((differences[variant].get(key) or {}).get("relative")) for key in keys
        ]
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return lines


def _relative_cell(relative: Mapping[str, Any] | None) -> str:
    if relative is None:
        return "–"
    low, high = relative["low"], relative["high"]
    interval = f" [{low:+.1%}, {high:+.1%}]" if low is not None and high is not None else ""
    return f"{relative['estimate']:+.1%}{interval}"


def _spread_table(variants: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = [
        "| variant | metric | seeds | per seed | min | max | std |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for variant in display_order(variants):
        entry = variants[variant]
        for key, spread in entry["spread"].items():
            if key.removeprefix("dialogsum.") in SPREAD_METRICS:
                values = ", ".join(f"{v:.3f}" for v in spread["per_seed"])
                seeds = ", ".join(str(s) for s in entry["seeds"])
                lines.append(
                    f"| {variant} | {key} | {seeds} | {values} | {spread['min']:.3f} | "
                    f"{spread['max']:.3f} | {spread['std']:.3f} |"
                )
    return lines


def _verdict_line(check: Mapping[str, Any]) -> str:
    decided = {True: "yes", False: "no", None: "no interval"}[check["decided"]]
    narrower = {True: "yes", False: "no", None: "no interval"}[check["interval_narrower_than_gap"]]
    met = "met" if check["met"] else "not met"
    return (
        f"- {check['statement']} — {check['target']}: {met}; the interval decides it: "
        f"{decided}; interval narrower than the gap: {narrower}"
    )


def report_chart_png(variants: Mapping[str, Mapping[str, Any]]) -> bytes:
    """Grouped bars: each score column (perplexity apart, on its own axis) per variant, with
    its 95% interval as an error bar where there is one."""
    from matplotlib.figure import Figure

    present = display_order(variants)
    scores = [key for key, _ in COLUMNS if key != "perplexity_raw"]
    scores += [
        key
        for key, _ in DIALOGSUM_COLUMNS[:3]
        if any(key in variants[v]["metrics"] for v in present)
    ]
    figure = Figure(figsize=(10, 4))
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [4, 1]})
    width = 0.8 / max(1, len(present))
    for i, variant in enumerate(present):
        values, errors = _bars(variants[variant], scores)
        x = [k + i * width for k in range(len(scores))]
        left.bar(x, values, width, yerr=errors, capsize=2, label=variant)
        values, errors = _bars(variants[variant], ["perplexity_raw"])
        right.bar([i], values, yerr=errors, capsize=2)
    left.set_xticks([x + width * (len(present) - 1) / 2 for x in range(len(scores))])
    left.set_xticklabels([k.replace(".", "\n") for k in scores], fontsize=8)
    left.set_ylabel("score (higher is better)")
    left.legend(fontsize=8)
    right.set_xticks(range(len(present)))
    right.set_xticklabels(present, rotation=45, fontsize=8)
    right.set_title("perplexity on raw text\n(lower is better)", fontsize=9)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _bars(entry: Mapping[str, Any], keys: Sequence[str]) -> tuple[list[float], list[list[float]]]:
    """Bar heights and matplotlib's ``yerr`` rows (below, above; 0 without an interval)."""
    values = [float(entry["metrics"].get(key) or 0.0) for key in keys]
    below, above = [], []
    for key, value in zip(keys, values, strict=True):
        low, high = entry["intervals"].get(key) or (value, value)
        below.append(max(0.0, value - low))
        above.append(max(0.0, high - value))
    return values, [below, above]
