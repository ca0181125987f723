"""What the results page and the README say of each results file: a headline line drawn
from its figures, or a table shown above its details (``benchmarks/report.py`` lists which
file gets which)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Figures = Mapping[str, Any]


def escape(text: str) -> str:
    """``text`` safe in a Markdown table cell."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("|", "\\|")


def default_run(f: Figures) -> str:
    gate, adapter, base = f["gate"], f.get("adapter", {}), f.get("base", {})
    verdict = "passed" if gate.get("passed") else "failed"
    audits = "passed" if f.get("audit_passed") else "failed"
    line = (
        f"the gate {verdict} (μ+σ {gate.get('mu_plus_sigma', float('nan')):.3g} against "
        f"{gate.get('threshold')}), "
        f"the audits {audits}"
    )
    if "summary.rouge1" in adapter:
        line += (
            f"; summary ROUGE-1 {adapter['summary.rouge1']:.3g} for the adapter, "
            f"{base.get('summary.rouge1', float('nan')):.3g} for the base model zero-shot "
            f"(a corpus of {f.get('conversations')} conversations, {f.get('train_steps')} steps)"
        )
    champion = f.get("register", {}).get("champion")
    return line + ("; registered as champion" if champion else "; registered, not champion")


def detection_quality(f: Figures) -> str:
    point = f.get("balanced") or next(iter(f.values()))
    cells = [
        f"{name}: char precision {m['char_precision']}, recall {m['char_recall']}"
        for name, m in point.items()
        if name.startswith(("presidio-research, held-out", "WNUT-17 train"))
    ]
    return "at the default (balanced) point, " + "; ".join(cells)


def detection_points(f: Figures) -> list[str]:
    """Data sets down, operating points across: char precision / recall (person recall)."""
    points = list(f)
    lines = ["| data | " + " | ".join(points) + " |", "| --- |" + " --- |" * len(points)]
    for name in f[points[0]]:
        cells = []
        for point in points:
            m = f[point][name]
            person = m["entity_recall_by_type"].get("PERSON_NAME", {}).get("recall")
            person_cell = f" ({person})" if person is not None else ""
            cells.append(f"{m['char_precision']} / {m['char_recall']}{person_cell}")
        lines.append(f"| {escape(name)} | " + " | ".join(cells) + " |")
    return [*lines, "", "Each cell: char precision / char recall (person entity recall)."]


def detection_speed(f: Figures) -> str:
    return (
        f"veiltune detects {f['veiltune_chars_per_s']} characters/s, {f['ratio']}× plain "
        f"Presidio's rate on the same {f['n_texts']} texts ({f['texts']})"
    )


def anonymize_memory(f: Figures) -> str:
    peaks = [
        (key.split("_")[3], value)
        for key, value in f.items()
        if key.startswith("peak_rss_mb_") and key.endswith("_conversations")
    ]
    cells = ", ".join(f"{mb} MB at {n} conversations" for n, mb in peaks)
    return f"`veiltune anonymize`'s peak memory: {cells}"


def cluster_throughput(f: Figures) -> str:
    identical = "identical" if f["identical_outputs"] else "NOT identical"
    return (
        f"2 Dask workers anonymize at {f['speedup_2_workers_vs_in_process']}× one process's "
        f"rate, 1 worker at {1 - f['overhead_1_worker_vs_in_process']:.3g}× "
        f"({f['n_conversations']} conversations, start-up included; outputs {identical})"
    )


def train_speed(f: Figures) -> str:
    return (
        "packing trains "
        f"{f['embedded_packing_speedup_vs_padded_max_length']}× the tokens/s of padding to "
        f"max_seq_length and {f['embedded_packing_speedup_vs_padded_longest']}× padding to "
        "the longest example (embedded corpus)"
    )


def overmasking(f: Figures) -> str:
    before = f.get("without_evidence", {})
    return (
        f"{f['common_lowercase_word_spans_per_10k_words']} spans on an everyday lowercase "
        f"word per 10,000 words of human-written dialogue ({f['data']}; "
        f"{before.get('common_lowercase_word_spans_per_10k_words')} without the evidence "
        f"rule); {f['title_case_name_spans']} title-case person spans "
        f"({before.get('title_case_name_spans')} without), of them "
        f"{f.get('title_case_known_name_spans')} known names "
        f"({before.get('title_case_known_name_spans')} without)"
    )


def audit_controls(f: Figures) -> str:
    held = f["controls_held"]
    kept = sum(all(checks.values()) for checks in held.values())
    return (
        f"on SmolLM2 the controls held at {kept} of {len(held)} seeds (the raw-text adapter "
        "flagged, the placeholder and surrogate adapters passed)"
    )


def gpu_train(f: Figures) -> list[str]:
    """One row per setting: what changed, speed, MFU, memory."""
    lines = [
        "| setting | engine | rows × length | tokens/s | MFU (LoRA) | peak memory |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for row in f["settings"]:
        packing = "packed" if row["packing"] else "padded"
        lines.append(
            f"| {row['setting']} "
            f"| {row['engine']} | {row['batch_size']} × {row['max_seq_length']} ({packing}) "
            f"| {row['tokens_per_s']:,.0f} | {row['mfu_lora']:.1%} | {row['peak_memory_gib']} GiB |"
        )
    return lines


def gpu_train_headline(f: Figures) -> str:
    best = max(f["settings"], key=lambda row: row["mfu_lora"])
    return (
        f"the train stage on one {f['device']}: at most {best['mfu_lora']:.1%} MFU "
        f"({best['tokens_per_s']:,.0f} tokens/s, {best['setting']}), against a 40% target"
    )


def utility_large(f: Figures) -> list[str]:
    """Variants down; each key metric's mean [95% interval], then summary ROUGE-1 against the
    oracle."""
    keys = ("summary.rouge1", "action_items.rouge1", "dialogsum.summary.rouge1", "perplexity_raw")
    return _utility_table(f, keys, versus=("summary.rouge1",))


def utility_transforms(f: Figures) -> list[str]:
    """Variants down; raw-text perplexity of the held-out calls and DialogSum, each with its
    difference from the oracle."""
    keys = ("perplexity_raw", "dialogsum.perplexity_raw")
    return _utility_table(f, keys, versus=keys)


def _utility_table(f: Figures, keys: Sequence[str], *, versus: Sequence[str]) -> list[str]:
    lines = [
        "| variant | " + " | ".join([*keys, *(f"{key} vs oracle" for key in versus)]) + " |",
        "| --- |" + " ---: |" * (len(keys) + len(versus)),
    ]
    for name, entry in f["variants"].items():
        cells = []
        for key in keys:
            cell = entry["metrics"].get(key)
            low_high = cell.get("interval") if cell else None
            interval = f" [{low_high[0]:.3f}, {low_high[1]:.3f}]" if low_high else ""
            cells.append(f"{cell['mean']:.3f}{interval}" if cell else "–")
        for key in versus:
            relative = entry["vs_oracle"].get(key)
            cells.append(
                f"{relative['estimate']:+.1%} [{relative['low']:+.1%}, {relative['high']:+.1%}]"
                if relative and name != "oracle"
                else "–"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    seeds = sorted({seed for entry in f["variants"].values() for seed in entry["seeds"]})
    rouge = f"; ROUGE by {f['rouge']}" if any("rouge" in key for key in keys) else ""
    return [
        *lines,
        "",
        f"{f['held_out_calls']} held-out calls and {f['held_out_dialogsum']} DialogSum "
        f"dialogues, scored raw; {f['train_steps']} steps; seeds {', '.join(map(str, seeds))} "
        f"averaged per conversation{rouge}.",
    ]


def utility_headline(f: Figures) -> str:
    surrogate = f["variants"]["surrogate-realistic"]["vs_oracle"]["summary.rouge1"]
    placeholder = f["variants"]["placeholder"]["vs_oracle"]["summary.rouge1"]
    return (
        f"on the large profile (one {f['device']}), summary ROUGE-1 of realistic surrogates "
        f"{surrogate['estimate']:+.1%} [{surrogate['low']:+.1%}, {surrogate['high']:+.1%}] "
        f"against the oracle, placeholders {placeholder['estimate']:+.1%} "
        f"[{placeholder['low']:+.1%}, {placeholder['high']:+.1%}]"
    )


def test_suite(f: Figures) -> str:
    counts = f["counts"]
    return (
        f"`make test` ran {counts.get('passed', 0)} tests in {f['wall_minutes']} minutes on "
        f"{f['workers']} workers"
    )


def _estimate(cell: Mapping[str, float] | None, digits: int = 3) -> str:
    if not cell:
        return "–"
    return f"{cell['estimate']:.{digits}f} [{cell['low']:.{digits}f}, {cell['high']:.{digits}f}]"


def dp_utility_headline(f: Figures) -> str:
    runs = f["runs"]
    reference = runs["non_dp"]["summary.rouge1"]["estimate"]
    cells = [
        f"ε {run.get('dp.epsilon')}: {run['summary.rouge1']['estimate']:.3f}"
        for name, run in runs.items()
        if name != "non_dp"
    ]
    return f"summary ROUGE-1 without DP {reference:.3f}; with DP " + ", ".join(cells)


def dp_utility(f: Figures) -> list[str]:
    """One row per run: utility with intervals, the paired difference, wall time, ε, noise."""
    lines = [
        "| run | ε spent | noise multiplier | summary ROUGE-1 [95%] | − non-DP [95%] "
        "| perplexity [95%] | train wall time | × non-DP |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, run in f["runs"].items():
        lines.append(
            f"| {name} | {run.get('dp.epsilon', '∞ (no DP)')} "
            f"| {run.get('dp.noise_multiplier', '–')} "
            f"| {_estimate(run['summary.rouge1'])} "
            f"| {_estimate(run.get('summary.rouge1 - non_dp')) if name != 'non_dp' else '–'} "
            f"| {_estimate(run['perplexity_raw'], 2)} "
            f"| {run['runtime_s']:.0f} s | {run['wall_time_ratio']} |"
        )
    base = f["base"]
    lines.append(
        f"| base model, zero-shot | – | – | {_estimate(base['summary.rouge1'])} | – "
        f"| {_estimate(base['perplexity_raw'], 2)} | – | – |"
    )
    return lines
