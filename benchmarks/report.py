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

from benchmarks import headlines
from benchmarks.headlines import Figures, escape
from benchmarks.results import REPO, RESULTS, read_results
from components.core.jsonio import write_text_atomic

README = REPO / "README.md"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
RESULTS_PAGE = "docs/results.md"
MAX_OPEN_FIGURES = 20  # a flat file this short is shown open; longer or nested ones folded


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


BENCHMARKS = (
    Benchmark(
        "test_suite",
        "The test suite",
        "`make test` as the Makefile runs it: its wall time, its counts and its 25 slowest "
        "tests, measured with nothing else running.",
        "python -m benchmarks.suite",
        headlines.test_suite,
    ),
    Benchmark(
        "default_run",
        "The default run",
        "The pipeline's own verdicts on the default corpus: gate, audits, utility against the "
        "base model, the registry's decision (copied from `metrics/` after a run).",
        "make run && python -m benchmarks.default_run",
        headlines.default_run,
    ),
    Benchmark(
        "detection_quality",
        "Detection quality",
        "Character precision and recall, entity recall and person recall at each operating "
        "point, on data the calibration used and data it never saw, and ages in "
        "presidio-research's age templates.",
        "python -m benchmarks.detection_quality",
        headlines.detection_quality,
        headlines.detection_points,
    ),
    Benchmark(
        "train_ner",
        "Training the conversational NER",
        "How veiltune's own NER (`anonymize.ner.model: conversational`) was trained: the "
        "labelled texts by set, the steps, the last epoch's loss and the time, with the "
        "settings; the adapter it wrote is the one shipped.",
        "python -m benchmarks.train_ner",
    ),
    Benchmark(
        "detection_quality_en_core_web_md",
        "Detection quality with spaCy's medium model",
        "The same sets at the default (balanced) point with `anonymize.spacy_model: "
        "en_core_web_md`, under the default calibration file (its balanced thresholds do not "
        "involve the spaCy recognizer).",
        "python -m benchmarks.detection_quality --points balanced --spacy-model en_core_web_md",
        None,
        headlines.detection_points,
    ),
    Benchmark(
        "overmasking",
        "Over-masking of everyday words",
        "Name, place, organization and username spans on a single lowercase common English "
        'word ("pay my bill"), per 10,000 words of DialogSum\'s human-written dev dialogues, '
        "beside the title-case person spans found and how many of them are known names.",
        "python -m benchmarks.overmasking",
        headlines.overmasking,
    ),
    Benchmark(
        "detection_speed",
        "Detection speed",
        "veiltune's detector (every recognizer, conversation-level passes) against plain "
        "Presidio with the same spaCy model, on the same texts in the same process.",
        "python -m benchmarks.run --only detection_speed",
        headlines.detection_speed,
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
        headlines.anonymize_memory,
    ),
    Benchmark(
        "long_record",
        "Anonymize: one long record",
        "Anonymizing a single record of 50,000 characters to a megabyte (Presidio in "
        "overlapping windows of 5,000), with numbered placeholders and with surrogates: the "
        "characters per second stay flat when time is linear in the record's length. The "
        "record is the embedded corpus glued into one conversation: thousands of distinct "
        "values (`distinct_values`), each needing a surrogate used nowhere else in it.",
        "python -m benchmarks.run --only long_record",
    ),
    Benchmark(
        "train_speed",
        "Training speed: packing",
        "Non-padding tokens per second of the default training config, packed against both "
        "padded baselines, on the embedded corpus and with DialogSum.",
        "python -m benchmarks.run --only train_speed",
        headlines.train_speed,
    ),
    Benchmark(
        "packing",
        "Packing: veiltune's and TRL's",
        "veiltune's first-fit decreasing packing against `trl.pack_dataset` (best-fit "
        "decreasing) on the same tokenized training examples: rows, padding in batches of 2 "
        "and 16, seconds, and the labels each trains across an example boundary.",
        "python -m benchmarks.packing",
    ),
    Benchmark(
        "cluster_throughput",
        "Dask cluster: throughput",
        "anonymize in one process, on a LocalCluster of 1 worker and of 2, start-up included.",
        "python -m benchmarks.cluster --only throughput",
        headlines.cluster_throughput,
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
        headlines.audit_controls,
    ),
    Benchmark(
        "utility_large",
        "Utility: the large profile on a GPU",
        "Adapters trained on the raw text (oracle), `[MASK]`, placeholders and realistic "
        "surrogates at the large profile's sizes, scored on raw held-out calls and DialogSum "
        "dialogues: means with 95% bootstrap intervals, paired differences from the oracle.",
        "python -m veiltune.utility_runner PACK ... && python -m benchmarks.utility_results "
        "--runs DIR",
        headlines.utility_headline,
        headlines.utility_large,
    ),
    Benchmark(
        "utility_transforms",
        "Utility of each transform on a GPU",
        "Adapters trained for the continuation task at the large profile's sizes on the raw "
        "text (oracle), `[MASK]` with and without loss on the masks (Baselines 0 and 1), "
        "placeholders, realistic surrogates, `allow_list`, `vocab_threshold`, and fragments of "
        "the placeholder and the raw text; perplexity of raw held-out calls and DialogSum "
        "dialogues (lower is better), means with 95% bootstrap intervals, paired differences "
        "from the oracle.",
        "veiltune utility-pack PACK --tasks continuation --eval-tasks ... && python -m "
        "veiltune.utility_runner PACK ... && python -m benchmarks.utility_results --runs DIR "
        "--name utility_transforms",
        summary=headlines.utility_transforms,
    ),
    Benchmark(
        "team_load",
        "The team stack under load",
        "20 clients at once against the MLflow server of `veiltune team up` (basic-auth app, "
        "PostgreSQL), each opening 5 runs, logging a batch of 20 metrics in each and "
        "registering a version of one shared model: calls per second and latency per kind of "
        "call. The clients, the server and PostgreSQL share one machine.",
        "python -m benchmarks.team_load",
    ),
    Benchmark(
        "gpu_train",
        "The train stage on a GPU",
        "`train_lora` itself (the stage's tokenizing, packing and Trainer) on SmolLM2-135M's "
        "shape: tokens/s, model-FLOPs utilization against the dense bf16 peak and peak memory, "
        "plain and under ZeRO-2, and one change at a time: rows × length, padding, frozen "
        "weights in bf16, Liger's fused linear cross-entropy.",
        "python -m benchmarks.gpu_train --config models/base --corpus data/raw/corpus.jsonl",
        headlines.gpu_train_headline,
        headlines.gpu_train,
    ),
    Benchmark(
        "dp_utility",
        "Differential privacy against none",
        "DP-SGD LoRA (`train.privacy`) against the default run's adapter on the same corpus, "
        "salt, split and seed: summary ROUGE-1 and held-out perplexity with 95% bootstrap "
        "intervals, the paired difference, train's wall time, the ε the accountant spent and "
        "the noise it took ([Differential privacy](privacy.md)).",
        "make run && python -m benchmarks.dp_utility",
        headlines.dp_utility_headline,
        headlines.dp_utility,
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
        f"- **Machine**: {machine['cpu_count']} × {machine.get('cpu_model') or 'CPU'}, "
        f"{machine.get('memory_gb')} GB, GPU: {machine.get('gpu') or 'none'}"
        + (
            f"; load average {load} when it started"
            if (load := machine.get("load_average_at_start")) is not None
            else ""
        ),
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
        label = [f"**{' › '.join(map(escape, path))}**", ""] if path else []
        lines += [*label, *_key_value_table(scalars), ""]
    for key, value in figures.items():
        if key in scalars:
            continue
        rows = _rows(value)
        if rows is not None:
            lines += [f"**{' › '.join(map(escape, (*path, key)))}**", "", *_matrix(rows), ""]
        elif isinstance(value, Mapping):
            lines += _figures(value, (*path, key))
        else:
            lines += [f"**{escape(key)}**: `{json.dumps(value, ensure_ascii=False)}`", ""]
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
        "| | " + " | ".join(escape(c) for c in columns) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    for name, row in rows.items():
        cells = [_value(row.get(column, "")) for column in columns]
        lines.append(f"| {escape(name)} | " + " | ".join(cells) + " |")
    return lines


def _key_value_table(values: Mapping[str, Any]) -> list[str]:
    lines = ["| figure | value |", "| --- | ---: |"]
    lines += [f"| {escape(key)} | {_value(value)} |" for key, value in values.items()]
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
    return escape(str(value))


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
