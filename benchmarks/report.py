"""The results page and the README's headline block, rendered from the results files
(``benchmarks/results/*.json``, written by ``benchmarks.results.write_result``): every
figure on them comes from a file, with the date, commit, machine and command that made it.
A benchmark without a file says so, with the command that measures it.

    python -m benchmarks.report --readme   # rewrite README.md's headline block (make bench)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from benchmarks.results import REPO, RESULTS, read_results
from components.core.jsonio import write_text_atomic

README = REPO / "README.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
RESULTS_PAGE = "docs/results.md"
MAX_OPEN_FIGURES = 20  # a flat file this short is shown open; longer or nested ones folded
Figures = Mapping[str, Any]


@dataclass(frozen=True)
class Benchmark:
    """A results file the docs know: its title, what it measures, the command that writes it
    and, for the headline ones, one line drawn from its figures."""

    name: str
    title: str
    about: str
    command: str
    headline: Callable[[Figures], str] | None = None
    summary: Callable[[Figures], list[str]] | None = None  # a table shown above the details


def _default_run(f: Figures) -> str:
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


def _detection_quality(f: Figures) -> str:
    point = f.get("balanced") or next(iter(f.values()))
    cells = [
        f"{name}: char precision {m['char_precision']}, recall {m['char_recall']}"
        for name, m in point.items()
        if name.startswith(("presidio-research, held-out", "WNUT-17 train"))
    ]
    return "at the default (balanced) point, " + "; ".join(cells)


def _detection_points(f: Figures) -> list[str]:
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
        lines.append(f"| {_escape(name)} | " + " | ".join(cells) + " |")
    return [*lines, "", "Each cell: char precision / char recall (person entity recall)."]


def _detection_speed(f: Figures) -> str:
    return (
        f"veiltune detects {f['veiltune_chars_per_s']} characters/s, {f['ratio']}× plain "
        f"Presidio's rate on the same {f['n_texts']} texts ({f['texts']})"
    )


def _anonymize_memory(f: Figures) -> str:
    peaks = [
        (key.split("_")[3], value)
        for key, value in f.items()
        if key.startswith("peak_rss_mb_") and key.endswith("_conversations")
    ]
    cells = ", ".join(f"{mb} MB at {n} conversations" for n, mb in peaks)
    return f"`veiltune anonymize`'s peak memory: {cells}"


def _cluster_throughput(f: Figures) -> str:
    identical = "identical" if f["identical_outputs"] else "NOT identical"
    return (
        f"2 Dask workers anonymize at {f['speedup_2_workers_vs_in_process']}× one process's "
        f"rate, 1 worker at {1 - f['overhead_1_worker_vs_in_process']:.3g}× "
        f"({f['n_conversations']} conversations, start-up included; outputs {identical})"
    )


def _train_speed(f: Figures) -> str:
    return (
        "packing trains "
        f"{f['embedded_packing_speedup_vs_padded_max_length']}× the tokens/s of padding to "
        f"max_seq_length and {f['embedded_packing_speedup_vs_padded_longest']}× padding to "
        "the longest example (embedded corpus)"
    )


def _overmasking(f: Figures) -> str:
    before = f.get("without_evidence", {})
    return (
        f"{f['common_lowercase_word_spans_per_10k_words']} spans on an everyday lowercase "
        f"word per 10,000 words of human-written dialogue ({f['data']}; "
        f"{before.get('common_lowercase_word_spans_per_10k_words')} without the evidence "
        f"rule), {f['title_case_name_spans']} title-case names found "
        f"({before.get('title_case_name_spans')} without)"
    )


def _audit_controls(f: Figures) -> str:
    held = f["controls_held"]
    kept = sum(all(checks.values()) for checks in held.values())
    return (
        f"on SmolLM2 the controls held at {kept} of {len(held)} seeds (the raw-text adapter "
        "flagged, the placeholder and surrogate adapters passed)"
    )


def _gpu_train(f: Figures) -> list[str]:
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


def _gpu_train_headline(f: Figures) -> str:
    best = max(f["settings"], key=lambda row: row["mfu_lora"])
    return (
        f"the train stage on one {f['device']}: at most {best['mfu_lora']:.1%} MFU "
        f"({best['tokens_per_s']:,.0f} tokens/s, {best['setting']}), against a 40% target"
    )


def _utility_large(f: Figures) -> list[str]:
    """Variants down; each key metric's mean [95% interval], then summary ROUGE-1 against the
    oracle."""
    keys = ("summary.rouge1", "action_items.rouge1", "dialogsum.summary.rouge1", "perplexity_raw")
    lines = [
        "| variant | " + " | ".join(keys) + " | summary.rouge1 vs oracle |",
        "| --- |" + " ---: |" * (len(keys) + 1),
    ]
    for name, entry in f["variants"].items():
        cells = []
        for key in keys:
            cell = entry["metrics"].get(key)
            low_high = cell.get("interval") if cell else None
            interval = f" [{low_high[0]:.3f}, {low_high[1]:.3f}]" if low_high else ""
            cells.append(f"{cell['mean']:.3f}{interval}" if cell else "–")
        relative = entry["vs_oracle"].get("summary.rouge1")
        versus = (
            f"{relative['estimate']:+.1%} [{relative['low']:+.1%}, {relative['high']:+.1%}]"
            if relative and name != "oracle"
            else "–"
        )
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {versus} |")
    seeds = sorted({seed for entry in f["variants"].values() for seed in entry["seeds"]})
    return [
        *lines,
        "",
        f"{f['held_out_calls']} held-out calls and {f['held_out_dialogsum']} DialogSum "
        f"dialogues, scored raw; {f['train_steps']} steps; seeds {', '.join(map(str, seeds))} "
        f"averaged per conversation; ROUGE by {f['rouge']}.",
    ]


def _utility_headline(f: Figures) -> str:
    surrogate = f["variants"]["surrogate-realistic"]["vs_oracle"]["summary.rouge1"]
    placeholder = f["variants"]["placeholder"]["vs_oracle"]["summary.rouge1"]
    return (
        f"on the large profile (one {f['device']}), summary ROUGE-1 of realistic surrogates "
        f"{surrogate['estimate']:+.1%} [{surrogate['low']:+.1%}, {surrogate['high']:+.1%}] "
        f"against the oracle, placeholders {placeholder['estimate']:+.1%} "
        f"[{placeholder['low']:+.1%}, {placeholder['high']:+.1%}]"
    )


def _test_suite(f: Figures) -> str:
    counts = f["counts"]
    return (
        f"`make test` ran {counts.get('passed', 0)} tests in {f['wall_minutes']} minutes on "
        f"{f['workers']} workers"
    )


BENCHMARKS = (
    Benchmark(
        "test_suite",
        "The test suite",
        "`make test` as the Makefile runs it: its wall time, its counts and its 25 slowest "
        "tests, measured with nothing else running.",
        "python -m benchmarks.suite",
        _test_suite,
    ),
    Benchmark(
        "default_run",
        "The default run",
        "The pipeline's own verdicts on the default corpus: gate, audits, utility against the "
        "base model, the registry's decision (copied from `metrics/` after a run).",
        "make run && python -m benchmarks.default_run",
        _default_run,
    ),
    Benchmark(
        "detection_quality",
        "Detection quality",
        "Character precision and recall, entity recall and person recall at each operating "
        "point, on data the calibration used and data it never saw, and ages in "
        "presidio-research's age templates.",
        "python -m benchmarks.detection_quality",
        _detection_quality,
        _detection_points,
    ),
    Benchmark(
        "detection_quality_en_core_web_md",
        "Detection quality with spaCy's medium model",
        "The same sets at the default (balanced) point with `anonymize.spacy_model: "
        "en_core_web_md`, under the default calibration file (its balanced thresholds do not "
        "involve the spaCy recognizer).",
        "python -m benchmarks.detection_quality --points balanced --spacy-model en_core_web_md",
        None,
        _detection_points,
    ),
    Benchmark(
        "overmasking",
        "Over-masking of everyday words",
        "Name, place, organization and username spans on a single lowercase common English "
        'word ("pay my bill"), per 10,000 words of DialogSum\'s human-written dev dialogues, '
        "beside the title-case names found.",
        "python -m benchmarks.overmasking",
        _overmasking,
    ),
    Benchmark(
        "detection_speed",
        "Detection speed",
        "veiltune's detector (every recognizer, conversation-level passes) against plain "
        "Presidio with the same spaCy model, on the same texts in the same process.",
        "python -m benchmarks.run --only detection_speed",
        _detection_speed,
    ),
    Benchmark(
        "anonymize_workers",
        "Anonymize with worker processes",
        "Anonymization throughput with 1 and 2 worker processes (`anonymize.workers`), model "
        "loading included.",
        "python -m benchmarks.run --only anonymize_workers",
    ),
    Benchmark(
        "anonymize_memory",
        "Anonymize: peak memory",
        "Peak memory of `veiltune anonymize` on corpora 4× and 16× larger: flat means streaming.",
        "python -m benchmarks.run --only anonymize_memory",
        _anonymize_memory,
    ),
    Benchmark(
        "train_speed",
        "Training speed: packing",
        "Non-padding tokens per second of the default training config, packed against both "
        "padded baselines, on the embedded corpus and with DialogSum.",
        "python -m benchmarks.run --only train_speed",
        _train_speed,
    ),
    Benchmark(
        "cluster_throughput",
        "Dask cluster: throughput",
        "anonymize in one process, on a LocalCluster of 1 worker and of 2, start-up included.",
        "python -m benchmarks.cluster --only throughput",
        _cluster_throughput,
    ),
    Benchmark(
        "cluster_memory",
        "Dask cluster: worker memory",
        "Each worker's peak memory (2 workers) as the corpus grows.",
        "python -m benchmarks.cluster --only memory",
    ),
    Benchmark(
        "cluster_merge",
        "Dask cluster: merge",
        "The client's sequential copy of the parts into the output: the one step that does "
        "not spread over workers.",
        "python -m benchmarks.cluster --only merge",
    ),
    Benchmark(
        "detection_transforms",
        "Detection by each privacy transform",
        "The entity engine, `lm_probability` (with its curve over p), both together, "
        "`vocab_threshold` and `allow_list`, on the shared labelled sets and the embedded "
        "corpus.",
        "python -m benchmarks.detection_transforms",
    ),
    Benchmark(
        "lm_context",
        "lm_probability: context",
        "`lm_probability` alone with each turn read alone and after the call so far.",
        "python -m benchmarks.detection_transforms --context-only",
    ),
    Benchmark(
        "transform_privacy",
        "Privacy of the training text",
        "The PI inventory's values surviving each detector setting, and fragments' linkage.",
        "python -m benchmarks.transform_privacy",
    ),
    Benchmark(
        "private_summary",
        "Private summaries",
        "The base model and five ways of training, asked for privacy-preserving summaries and "
        "scored by the offline judge.",
        "python -m benchmarks.private_summary",
    ),
    Benchmark(
        "generation",
        "Generation settings",
        "A finished run's adapter and base model summarizing its held-out DialogSum dialogues "
        "with plain greedy decoding and with `train.generation`'s: ROUGE-1 with its 95% "
        "bootstrap interval, the share of answers repeating a sentence or four words, their "
        "length.",
        "make run && python -m benchmarks.generation",
    ),
    Benchmark(
        "audit_controls",
        "Leakage audits: positive controls",
        "Three LoRA adapters on SmolLM2, trained alike on a small corpus with canaries planted "
        "once, three and six times: on the raw text, on placeholders, on surrogates; every "
        "audit on each. The raw adapter must be flagged and the others pass.",
        "python -m benchmarks.audit_controls",
        _audit_controls,
    ),
    Benchmark(
        "utility_large",
        "Utility: the large profile on a GPU",
        "Adapters trained on the raw text (oracle), `[MASK]`, placeholders and realistic "
        "surrogates at the large profile's sizes, scored on raw held-out calls and DialogSum "
        "dialogues: means with 95% bootstrap intervals, paired differences from the oracle.",
        "python -m veiltune.utility_runner PACK ... && python -m benchmarks.utility_results "
        "--runs DIR",
        _utility_headline,
        _utility_large,
    ),
    Benchmark(
        "gpu_train",
        "The train stage on a GPU",
        "`train_lora` itself (the stage's tokenizing, packing and Trainer) on SmolLM2-135M's "
        "shape: tokens/s, model-FLOPs utilization against the dense bf16 peak and peak memory, "
        "plain and under ZeRO-2, and one change at a time: rows × length, padding, frozen "
        "weights in bf16, Liger's fused linear cross-entropy.",
        "python -m benchmarks.gpu_train --config models/base --corpus data/raw/corpus.jsonl",
        _gpu_train_headline,
        _gpu_train,
    ),
    Benchmark(
        "gpu_lora",
        "LoRA on a GPU",
        "Tokens/s and model-FLOPs utilization of LoRA on a 1B Llama-shaped model, ZeRO-2, bf16.",
        "python -m benchmarks.gpu_lora",
    ),
)
BY_NAME = {benchmark.name: benchmark for benchmark in BENCHMARKS}


def results_page(results: Mapping[str, Mapping[str, Any]]) -> str:
    """The results page's generated body: a summary of what is measured, then each
    benchmark's envelope and figures, then any results file no benchmark here names."""
    lines = ["| benchmark | measured | command |", "| --- | --- | --- |"]
    for b in BENCHMARKS:
        record = results.get(b.name)
        measured = _when(record) if record else "**not measured yet**"
        lines.append(f"| [{b.title}](#{_anchor(b.title)}) | {measured} | `{b.command}` |")
    for b in BENCHMARKS:
        lines += ["", f"## {b.title}", "", b.about, ""]
        record = results.get(b.name)
        if record is None:
            lines.append(f"**Not measured yet**: run `{b.command}`.")
            continue
        lines += _record_section(record, b)
    others = sorted(set(results) - set(BY_NAME))
    for name in others:
        lines += ["", f"## {name}", "", *_record_section(results[name], None)]
    return "\n".join(lines) + "\n"


def readme_block(results: Mapping[str, Mapping[str, Any]]) -> str:
    """The README's headline lines: one per headline benchmark, from its file."""
    lines = []
    for b in BENCHMARKS:
        if b.headline is None:
            continue
        record = results.get(b.name)
        if record is None:
            lines.append(f"- **{b.title}**: not measured yet (`{b.command}`).")
        else:
            lines.append(f"- **{b.title}**: {b.headline(record['figures'])} ({_when(record)}).")
    page = f"[the results page]({RESULTS_PAGE})"
    lines.append(f"- Every figure, with its machine and command: {page}.")
    return "\n".join(lines)


def with_readme_block(readme: str, block: str) -> str:
    """``readme`` with the text between its results markers replaced by ``block``."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(readme):
        raise ValueError(f"README.md has no {BEGIN} ... {END} block")
    return pattern.sub(lambda _: f"{BEGIN}\n{block}\n{END}", readme, count=1)


def _when(record: Mapping[str, Any]) -> str:
    machine = record["machine"]
    gpu = f", {machine['gpu']}" if machine.get("gpu") else ", no GPU"
    commit = (record["commit"] or "no commit")[:7] + (" + changes" if record["dirty"] else "")
    load = machine.get("load_average_at_start")
    busy = f" (load {load})" if load is not None else ""
    return f"{record['date'][:10]}, {commit}, {machine['cpu_count']} cores{busy}{gpu}"


def _record_section(record: Mapping[str, Any], benchmark: Benchmark | None) -> list[str]:
    """The envelope's facts, the benchmark's short form of its figures, then every figure."""
    machine = record["machine"]
    facts = [
        f"- **Measured**: {record['date']} at commit `{record['commit']}`"
        + (" with uncommitted changes" if record["dirty"] else ""),
        f"- **Machine**: {machine['cpu_count']} × {machine['cpu_model']}, "
        f"{machine.get('memory_gb')} GB, GPU: {machine.get('gpu') or 'none'}; load average "
        f"{machine.get('load_average_at_start')} when it started",
        f"- **Command**: `{record['command']}`",
    ]
    figures = record["figures"]
    if benchmark is not None and benchmark.headline is not None:
        facts.append(f"- **In short**: {benchmark.headline(figures)}")
    summary = benchmark.summary(figures) if benchmark and benchmark.summary else []
    table = _figures(figures, ())
    if len(figures) <= MAX_OPEN_FIGURES and all(map(_is_flat_value, figures.values())):
        return [*facts, "", *summary, "", *table]
    # a long or nested file, folded: a reader opens what the summary does not say
    body = [f"    {line}" if line else "" for line in table]
    return [*facts, "", *summary, "", '??? info "Every figure in the file"', "", *body]


def _figures(figures: Mapping[str, Any], path: tuple[str, ...]) -> list[str]:
    """Scalars as a figure | value table; a mapping of flat mappings (or a list of them) as
    one table with a row each; anything deeper labelled with its path of keys."""
    scalars = {k: v for k, v in figures.items() if _is_flat_value(v)}
    lines = []
    if scalars:
        label = [f"**{' › '.join(map(_escape, path))}**", ""] if path else []
        lines += [*label, *_key_value_table(scalars), ""]
    for key, value in figures.items():
        if key in scalars:
            continue
        rows = _rows(value)
        if rows is not None:
            lines += [f"**{' › '.join(map(_escape, (*path, key)))}**", "", *_matrix(rows), ""]
        elif isinstance(value, Mapping):
            lines += _figures(value, (*path, key))
        else:
            lines += [f"**{_escape(key)}**: `{json.dumps(value, ensure_ascii=False)}`", ""]
    return lines


def _rows(value: Any) -> dict[str, Mapping[str, Any]] | None:
    """``value`` as table rows when it is a mapping or list of flat mappings."""
    if isinstance(value, list):
        value = {str(i + 1): row for i, row in enumerate(value)}
    if not isinstance(value, Mapping) or not value:
        return None
    if all(
        isinstance(row, Mapping) and all(map(_is_flat_value, row.values()))
        for row in value.values()
    ):
        return dict(value)
    return None


def _matrix(rows: Mapping[str, Mapping[str, Any]]) -> list[str]:
    columns = list(dict.fromkeys(column for row in rows.values() for column in row))
    lines = [
        "| | " + " | ".join(_escape(c) for c in columns) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    for name, row in rows.items():
        cells = [_value(row.get(column, "")) for column in columns]
        lines.append(f"| {_escape(name)} | " + " | ".join(cells) + " |")
    return lines


def _key_value_table(values: Mapping[str, Any]) -> list[str]:
    lines = ["| figure | value |", "| --- | ---: |"]
    lines += [f"| {_escape(key)} | {_value(value)} |" for key, value in values.items()]
    return lines


def _is_flat_value(value: Any) -> bool:
    scalar = (str, int, float, bool, type(None))
    return isinstance(value, scalar) or (
        isinstance(value, list) and all(isinstance(v, scalar) for v in value)
    )


def _value(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_value(v) for v in value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return _escape(str(value))


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("|", "\\|")


def _anchor(title: str) -> str:
    """The anchor Python-Markdown's toc gives a ``## title`` heading (its own slugify)."""
    from markdown.extensions.toc import slugify

    return slugify(title, "-")


def refresh_readme() -> None:
    """Rewrite README.md's results block from the results files as they are now."""
    text = README.read_text(encoding="utf-8")
    write_text_atomic(README, with_readme_block(text, readme_block(read_results(RESULTS))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readme", action="store_true", help="rewrite README.md's block")
    args = parser.parse_args(argv)
    if args.readme:
        refresh_readme()
        return 0
    sys.stdout.write(results_page(read_results(RESULTS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
