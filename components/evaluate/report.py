"""The privacy–utility report: base model, masked, anonymized and oracle adapters side by side.

The variants are DVC experiments of the one pipeline (``dvc exp run -S train.corpus=raw``),
not copies of it. This module reads what ``dvc exp show --json`` reports, keeps the newest
run of each training corpus, and tabulates their ``metrics/evaluate.json``; the base model's
zero-shot scores come from the same file (every evaluate run scores it). When the corpus
includes DialogSum, its held-out dialogues get a table of their own (``dialogsum.*`` keys).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

EVALUATE_METRICS = "metrics/evaluate.json"
VARIANTS = ("base", "masked", "anonymized", "oracle")
CORPUS_TO_VARIANT = {"raw": "oracle", "masked": "masked", "anonymized": "anonymized"}
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
TOLERANCE = 0.05  # the anonymized adapter should be within 5% of the oracle


def _runs(entries: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(name, data) of the workspace, each baseline and every experiment under it."""
    for entry in entries:
        if entry.get("data"):
            yield str(entry.get("name") or entry.get("rev")), entry["data"]
        for experiment in entry.get("experiments") or []:
            for rev in experiment.get("revs") or []:
                if rev.get("data"):
                    yield (
                        str(rev.get("name") or experiment.get("name") or rev.get("rev")),
                        rev["data"],
                    )


def collect_variants(exp_show: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Variant → {"run": name, "timestamp", "metrics"} from ``dvc exp show --json``; the
    newest run of each training corpus wins."""
    found: dict[str, dict[str, Any]] = {}
    for name, data in _runs(exp_show):
        evaluated = ((data.get("metrics") or {}).get(EVALUATE_METRICS) or {}).get("data")
        params = ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}
        if not evaluated or "adapter" not in evaluated:
            continue
        # The metrics file says what its adapter was trained on; the params beside it may
        # be newer than the outputs (a workspace reset after an experiment ran in it).
        corpus = evaluated.get("variant") or (params.get("train") or {}).get("corpus", "anonymized")
        stamp = str(data.get("timestamp") or "")
        candidates = [(CORPUS_TO_VARIANT.get(corpus, corpus), evaluated["adapter"])]
        if "base" in evaluated:
            candidates.append(("base", evaluated["base"]))
        for variant, metrics in candidates:
            if variant not in found or stamp > found[variant]["timestamp"]:
                found[variant] = {"run": name, "timestamp": stamp, "metrics": metrics}
    return found


def comparison(variants: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """How the anonymized adapter stands against the oracle (within 5%?) and against the
    base model and the masked baseline (above them?)."""
    metrics = {v: variants[v]["metrics"] for v in variants}
    verdict: dict[str, Any] = {}
    if "anonymized" in metrics and "oracle" in metrics:
        a, o = metrics["anonymized"], metrics["oracle"]
        rouge_gap = (
            1 - a.get("summary.rouge1", 0.0) / o["summary.rouge1"]
            if o.get("summary.rouge1")
            else None
        )
        ppl_gap = a["perplexity_raw"] / o["perplexity_raw"] - 1 if o.get("perplexity_raw") else None
        verdict["rouge1_gap_to_oracle"] = None if rouge_gap is None else round(rouge_gap, 4)
        verdict["perplexity_gap_to_oracle"] = None if ppl_gap is None else round(ppl_gap, 4)
        verdict["within_5pct_of_oracle"] = (
            rouge_gap is not None
            and ppl_gap is not None
            and rouge_gap <= TOLERANCE
            and ppl_gap <= TOLERANCE
        )
        if o.get("dialogsum.summary.rouge1") and "dialogsum.summary.rouge1" in a:
            gap = 1 - a["dialogsum.summary.rouge1"] / o["dialogsum.summary.rouge1"]
            verdict["dialogsum_rouge1_gap_to_oracle"] = round(gap, 4)
    for other in ("base", "masked"):
        if "anonymized" in metrics and other in metrics:
            verdict[f"rouge1_above_{other}"] = metrics["anonymized"].get(
                "summary.rouge1", 0.0
            ) > metrics[other].get("summary.rouge1", 0.0)
    return verdict


def report_markdown(variants: Mapping[str, Mapping[str, Any]], verdict: Mapping[str, Any]) -> str:
    """The main corpus's table, DialogSum's when any variant was scored on it, the verdict."""
    lines = _markdown_table(variants, COLUMNS)
    if any(DIALOGSUM_COLUMNS[0][0] in entry["metrics"] for entry in variants.values()):
        lines += ["", "DialogSum (held-out dialogues, human-written summaries):", ""]
        lines += _markdown_table(variants, DIALOGSUM_COLUMNS)
    lines += ["", *(f"- {key}: {value}" for key, value in verdict.items())]
    return "\n".join(lines) + "\n"


def _markdown_table(
    variants: Mapping[str, Mapping[str, Any]], columns: Sequence[tuple[str, str]]
) -> list[str]:
    header = "| variant | run | " + " | ".join(label for _, label in columns) + " |"
    lines = [header, "|---|---|" + "---:|" * len(columns)]
    for variant in VARIANTS:
        if variant not in variants:
            lines.append(f"| {variant} | (not run) |" + " |" * len(columns))
            continue
        metrics = variants[variant]["metrics"]
        cells = [_cell(metrics.get(key)) for key, _ in columns]
        lines.append(f"| {variant} | {variants[variant]['run']} | " + " | ".join(cells) + " |")
    return lines


def _cell(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "–"


def report_chart_png(variants: Mapping[str, Mapping[str, Any]]) -> bytes:
    """Grouped bars: each score column (perplexity apart, on its own axis) per variant."""
    from matplotlib.figure import Figure

    present = [v for v in VARIANTS if v in variants]
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
        values = [float(variants[variant]["metrics"].get(k) or 0.0) for k in scores]
        left.bar([x + i * width for x in range(len(scores))], values, width, label=variant)
        right.bar([i], [float(variants[variant]["metrics"].get("perplexity_raw") or 0.0)])
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
