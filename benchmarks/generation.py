"""The summaries a finished run's adapter (and its base model) writes for held-out
human-written dialogues (DialogSum), under the old generation settings (plain greedy) and
under train.generation's: ROUGE-1 with its 95% bootstrap interval, the paired difference,
the share of answers that repeat a sentence or a 4-word sequence, and their mean length.

    python -m benchmarks.generation [--run DIR] [--limit 40] [--settings NAME=PENALTY:NGRAM]

DIR is a checkout after `make run` (default: this one): its models/base, models/adapter,
data/raw/corpus.jsonl, data/splits.json and params.yaml (evaluate.max_new_tokens and
max_prompt_tokens, as evaluate generates); nothing is written there. Writes
benchmarks/results/generation.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml

from benchmarks.results import write_result
from components.core.corpus import load_corpus
from components.evaluate.answer_scores import rouge_scores
from components.evaluate.intervals import bootstrap_interval, paired_difference
from components.ingest import DATASET
from components.ingest.dialogsum import dataset_of
from components.train import Example, GenerationSettings, fit_prompt, task_examples
from components.train.generation import PLAIN

BEFORE = "before"
_WORD = re.compile(r"[a-z0-9#]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def heldout_summaries(run: Path, limit: int) -> list[Example]:
    """The summary examples of the run's first ``limit`` held-out DialogSum dialogues."""
    splits = json.loads((run / "data" / "splits.json").read_text(encoding="utf-8"))
    heldout = set(splits["heldout"])
    conversations = [
        c
        for c in load_corpus(run / "data" / "raw" / "corpus.jsonl")
        if c.id in heldout and dataset_of(c) == DATASET
    ]
    examples = [e for c in conversations for e in task_examples(c, ["summary"])]
    return examples[:limit]


def repeats_a_sentence(text: str) -> bool:
    """Whether some sentence (case and spacing aside) comes twice."""
    sentences = [" ".join(_WORD.findall(s.lower())) for s in _SENTENCE_END.split(text)]
    sentences = [s for s in sentences if s]
    return len(sentences) != len(set(sentences))


def repeats_a_4gram(text: str) -> bool:
    """Whether some sequence of four words (lowercase) comes twice."""
    words = _WORD.findall(text.lower())
    grams = [tuple(words[i : i + 4]) for i in range(len(words) - 3)]
    return len(grams) != len(set(grams))


def answer_figures(
    outputs: Sequence[str], examples: Sequence[Example], *, seconds: float
) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
    """One model's answers under one setting, in figures (never their text), and its ROUGE-1
    sample."""
    sample = {
        e.conversation_id: (rouge_scores(o, e.target)["rouge1"], 1.0)
        for o, e in zip(outputs, examples, strict=True)
    }
    interval = bootstrap_interval(sample)
    n = len(outputs)
    return {
        "rouge1": _interval(interval.estimate, interval.low, high=interval.high),
        "repeated_sentence_share": round(sum(map(repeats_a_sentence, outputs)) / n, 3),
        "repeated_4gram_share": round(sum(map(repeats_a_4gram, outputs)) / n, 3),
        "mean_words": round(sum(len(_WORD.findall(o.lower())) for o in outputs) / n, 1),
        "seconds": round(seconds, 1),
    }, sample


def measure(
    run: Path, examples: Sequence[Example], *, settings: Mapping[str, GenerationSettings]
) -> dict[str, Any]:
    """Each model's figures under each setting, and each setting's paired ROUGE-1
    difference from the first."""
    from components.train import generate, load_adapter, load_base

    params = yaml.safe_load((run / "params.yaml").read_text(encoding="utf-8"))["evaluate"]
    loaders = {
        "adapter": lambda: load_adapter(run / "models" / "base", run / "models" / "adapter"),
        "base": lambda: load_base(run / "models" / "base"),
    }
    figures: dict[str, Any] = {}
    for model_name, load in loaders.items():
        model, tokenizer = load()
        prompts = [
            fit_prompt(e.prompt, tokenizer, max_tokens=params["max_prompt_tokens"])
            for e in examples
        ]
        samples: dict[str, dict[str, tuple[float, float]]] = {}
        for name, chosen in settings.items():
            started = time.monotonic()
            outputs = generate(
                model,
                tokenizer,
                prompts=prompts,
                max_new_tokens=params["max_new_tokens"],
                settings=chosen,
            )
            row, samples[name] = answer_figures(
                outputs, examples, seconds=time.monotonic() - started
            )
            if name != next(iter(settings)):
                diff = paired_difference(samples[name], samples[next(iter(settings))]).absolute
                row["rouge1_minus_first"] = _interval(diff.estimate, diff.low, high=diff.high)
            figures[f"{model_name} {name}"] = row
            print(model_name, name, json.dumps(row), file=sys.stderr, flush=True)
        del model
    return figures


def _interval(estimate: float, low: float, *, high: float) -> str:
    return f"{estimate:.3f} [{low:.3f}, {high:.3f}]"


def parse_settings(specs: Sequence[str]) -> dict[str, GenerationSettings]:
    """``before`` (plain greedy), then each ``NAME=PENALTY:NGRAM`` (default: ``after``,
    train.generation's defaults)."""
    settings = {BEFORE: PLAIN}
    for spec in specs or [f"after={GenerationSettings().repetition_penalty}:"]:
        name, _, values = spec.partition("=")
        penalty, _, ngram = values.partition(":")
        settings[name] = GenerationSettings(
            float(penalty),
            int(ngram) if ngram else GenerationSettings().no_repeat_ngram_size,
        )
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", type=Path, default=Path("."), help="a checkout after make run")
    parser.add_argument("--limit", type=int, default=40, help="held-out dialogues at most")
    parser.add_argument("--settings", action="append", default=[], metavar="NAME=PENALTY:NGRAM")
    parser.add_argument("--name", default="generation", help="the results file's name")
    args = parser.parse_args(argv)
    if not (args.run / "models" / "adapter" / "adapter_config.json").is_file():
        print(f"benchmarks: --run {args.run}: a checkout after make run", file=sys.stderr)
        return 1
    examples = heldout_summaries(args.run, args.limit)
    settings = parse_settings(args.settings)
    figures = {
        "run": str(args.run.resolve()),
        "dialogues": [e.conversation_id for e in examples],
        "settings": {name: asdict(s) for name, s in settings.items()},
        "references": {
            "repeated_sentence_share": round(
                sum(repeats_a_sentence(e.target) for e in examples) / len(examples), 3
            ),
            "repeated_4gram_share": round(
                sum(repeats_a_4gram(e.target) for e in examples) / len(examples), 3
            ),
            "mean_words": round(
                sum(len(_WORD.findall(e.target.lower())) for e in examples) / len(examples), 1
            ),
        },
        "models": measure(args.run, examples, settings=settings),
    }
    write_result(args.name, figures)
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
