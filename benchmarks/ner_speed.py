"""The transformer NER's cost: each built-in NER's throughput (veiltune's conversational one,
the default, and rampart) on 1 and 2 ONNX Runtime threads, and
detection (``veiltune detect``'s path) with the NER and without it, against plain Presidio on
the same spaCy model, all on the embedded corpus's turns in one process.

    python -m benchmarks.ner_speed [--conversations 200]   (or: benchmarks.run --only ner_speed)

Writes benchmarks/results/ner_speed.json, with the machine's load average when it started:
on a shared machine the figures move with it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from benchmarks.detection_quality import REPO
from benchmarks.results import write_result

THREADS = (1, 2)


def corpus_turns(n_conversations: int = 200, seed: int = 1) -> list[str]:
    """The turns of the embedded corpus, as ingest generates it."""
    from components.ingest.generate import generate_corpus

    return [t.text for c in generate_corpus(n_conversations, seed) for t in c.turns]


def seconds(fn: Callable[[], Any], repeats: int = 2) -> float:
    """The fastest of ``repeats`` runs of ``fn`` (the machine is shared: the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def ner_throughput(model: str, texts: list[str], *, threads: int, batch_size: int = 32) -> float:
    """``model``'s characters a second over ``texts`` (classification alone, model loaded)."""
    from components.anonymize.ner import load_token_classifier

    classifier = load_token_classifier(model, REPO, threads=threads, batch_size=batch_size)
    classifier.classify(texts[:8])  # warm
    return sum(map(len, texts)) / seconds(lambda: classifier.classify(texts))


def detect_throughput(texts: list[str], ner: bool) -> float:
    """``veiltune detect``'s characters a second over ``texts``, the NER on or off."""
    from components.anonymize.config import AnonymizeConfig, NerConfig
    from components.anonymize.factory import anonymization_policy, build_detector, detection_records
    from components.core.corpus import Conversation, Turn

    config = AnonymizeConfig()
    if not ner:
        config = replace(config, ner=NerConfig(model=None))
    detector, policy = build_detector(config, REPO), anonymization_policy(config, REPO)
    records = [Conversation(str(i), (Turn(None, t),), plain=True) for i, t in enumerate(texts)]
    detector.detect(texts[:8])  # warm
    return sum(map(len, texts)) / seconds(
        lambda: list(detection_records(records, detector, policy=policy, batch_size=64))
    )


def plain_presidio_throughput(texts: list[str]) -> float:
    """Presidio's own analyzer, one text at a time, on the same spaCy model."""
    from benchmarks.run import plain_presidio

    plain = plain_presidio()
    plain.analyze(texts[0], language="en")  # warm
    return sum(map(len, texts)) / seconds(
        lambda: [plain.analyze(t, language="en") for t in texts], repeats=1
    )


def run(n_conversations: int = 200) -> dict[str, Any]:
    """Every figure, chars/s rounded, and the ratios the issue's speed target reads, written
    as ``ner_speed``."""
    import os

    texts = corpus_turns(n_conversations)
    figures: dict[str, Any] = {
        "texts": f"embedded corpus, {n_conversations} conversations (seed 1)",
        "n_texts": len(texts),
        "n_chars": sum(map(len, texts)),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    from components.anonymize.config import NER_BUILT_IN

    for model in NER_BUILT_IN:
        for threads in THREADS:
            figures[f"{model}_threads_{threads}_chars_per_s"] = round(
                ner_throughput(model, texts, threads=threads)
            )
    figures["detect_ner_off_chars_per_s"] = round(detect_throughput(texts, ner=False))
    figures["detect_ner_on_chars_per_s"] = round(detect_throughput(texts, ner=True))
    figures["plain_presidio_chars_per_s"] = round(plain_presidio_throughput(texts))
    on, off = figures["detect_ner_on_chars_per_s"], figures["detect_ner_off_chars_per_s"]
    figures["ner_on_vs_off"] = round(on / off, 3)
    figures["ner_on_vs_plain_presidio"] = round(on / figures["plain_presidio_chars_per_s"], 3)
    write_result("ner_speed", figures)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=200, help="of the embedded corpus")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.conversations), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
