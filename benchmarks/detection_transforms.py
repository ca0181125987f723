"""Detection by each privacy transform (docs: Other privacy transforms): the entity engine, LM-
probability redaction (its precision-recall curve over p and the default operating point),
both together, vocab_threshold and allow_list, each on the shared labelled sets and the
embedded corpus; character precision/recall, entity recall, the share of words masked, and
each detector's characters per second.

    python -m benchmarks.detection_transforms [--limit 300] [--conversations 30]
    python -m benchmarks.detection_transforms --context-only   # lm_probability's context

``--context-only`` scores the embedded conversations with ``lm_probability`` alone, each
turn read alone (``context_tokens`` 0) and after the call so far (the default), with each
one's characters per second.

Reads ../shared/data (presidio-research, WNUT-17); writes
benchmarks/results/detection_transforms.json (``--context-only``: lm_context.json). Each
detector reads every text once (its answers are kept), so a setting or a p costs only its
thresholding.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

# the offline environment, the checkout and the shared data, as the detection benchmark has them
from benchmarks.detection_quality import REPO, SHARED
from benchmarks.results import write_result

if TYPE_CHECKING:  # the components are imported where used: `--help` stays fast
    from components.anonymize.config import DetectorName
    from components.anonymize.engine import Detector

DATASETS = {
    "presidio-research (held-out templates)": (
        "presidio_research",
        SHARED / "presidio_research" / "generated_large.json",
        "heldout",
    ),
    "WNUT-17 train": ("wnut17", SHARED / "wnut17" / "wnut17train.conll", "all"),
    "embedded corpus": ("embedded", None, "all"),
}
SETTINGS: dict[str, list[DetectorName]] = {
    "entities": ["entities"],
    "lm_probability": ["lm_probability"],
    "entities+lm_probability": ["entities", "lm_probability"],
    "vocab_threshold": ["vocab_threshold"],
    "allow_list": ["allow_list"],
}
P_VALUES = (1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1)


def measure(items: list[Any]) -> dict[str, Any]:
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.evaluation.run import evaluate_detection
    from components.anonymize.evaluation.sweep import Memo
    from components.anonymize.factory import (
        WORD_LEVEL_BUILDERS,
        anonymization_policy,
        build_detector,
        entity_detector,
    )
    from components.anonymize.lm_probability import LmProbabilityDetector

    config = AnonymizeConfig()
    policy = anonymization_policy(config, REPO)
    entities = Memo(entity_detector(config, REPO))
    lm = WORD_LEVEL_BUILDERS["lm_probability"](config, REPO)
    assert isinstance(lm, LmProbabilityDetector)
    scorer = Memo(lm.scorer)
    words = {
        name: Memo(WORD_LEVEL_BUILDERS[name](config, REPO))
        for name in ("vocab_threshold", "allow_list")
    }

    def score(detectors: list[DetectorName], p: float) -> dict[str, Any]:
        setting = dataclasses.replace(config, detectors=detectors)
        built: dict[str, Detector] = {
            "entities": entities,
            "lm_probability": LmProbabilityDetector(scorer, p),
            **words,
        }
        metrics, _ = evaluate_detection(
            items, build_detector(setting, REPO, built=built), policy=policy, batch_size=64
        )
        keep = ("char_precision", "char_recall", "entity_recall", "masked_word_share")
        return {key: metrics[key] for key in keep} | {"n_texts": metrics["n_texts"]}

    default_p = config.lm_probability.p
    rows = {name: score(detectors, default_p) for name, detectors in SETTINGS.items()}
    speed = {
        "entities": entities,
        "lm_probability": scorer,
        **words,
    }
    for name, memo in speed.items():
        rows[name]["chars_per_second"] = (
            round(memo.chars / memo.seconds, 1) if memo.seconds else None
        )
    curve = {
        name: [{"p": p, **score(detectors, p)} for p in P_VALUES]
        for name, detectors in SETTINGS.items()
        if "lm_probability" in detectors
    }
    return {"default_p": default_p, "rows": rows, "curve": curve}


def context_comparison(items: list[Any], values: tuple[int, ...] = (0, 64)) -> dict[int, Any]:
    """``lm_probability`` alone at the default p with each ``context_tokens`` value."""
    import time

    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.evaluation.run import evaluate_detection
    from components.anonymize.factory import anonymization_policy, build_detector

    base = AnonymizeConfig(detectors=["lm_probability"])
    policy = anonymization_policy(base, REPO)
    rows = {}
    for value in values:
        settings = dataclasses.replace(base.lm_probability, context_tokens=value)
        detector = build_detector(dataclasses.replace(base, lm_probability=settings), REPO)
        started = time.perf_counter()
        metrics, _ = evaluate_detection(items, detector, policy=policy, batch_size=64)
        seconds = time.perf_counter() - started
        keep = ("char_precision", "char_recall", "entity_recall", "masked_word_share")
        rows[value] = {key: metrics[key] for key in keep}
        rows[value]["chars_per_second"] = round(metrics["n_chars"] / seconds, 1)
        print(f"context_tokens {value}: {rows[value]}", file=sys.stderr)
    return rows


def labelled(
    kind: str, path: Path | None, *, split: str, limit: int, conversations: int
) -> list[Any]:
    """The first ``limit`` texts of a shared set; the embedded corpus's first
    ``conversations``, every turn of each (a turn is read with the turns before it)."""
    from components.anonymize.evaluation.datasets import load_labelled

    if kind != "embedded":
        return load_labelled(kind, path, limit=limit, split=split)
    turns = load_labelled(kind, None, limit=None, split=split)
    kept = set(list(dict.fromkeys(t.conversation for t in turns))[:conversations])
    return [t for t in turns if t.conversation in kept]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=300, help="texts of each shared set")
    parser.add_argument("--conversations", type=int, default=30, help="embedded conversations")
    parser.add_argument("--context-only", action="store_true", help="lm_probability's context")
    args = parser.parse_args()
    if args.context_only:
        items = labelled("embedded", None, split="all", limit=0, conversations=args.conversations)
        rows = context_comparison(items)
        write_result("lm_context", {f"context_tokens {k}": v for k, v in rows.items()})
        header = "char precision | char recall | entity recall | words masked | chars/s"
        print(f"| context_tokens | {header} |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for value, m in rows.items():
            print(
                f"| {value} | {m['char_precision']:.3f} | {m['char_recall']:.3f} "
                f"| {m['entity_recall']:.3f} | {m['masked_word_share']:.1%} "
                f"| {m['chars_per_second']:,.0f} |"
            )
        return 0
    if not (SHARED / "wnut17").is_dir():
        print(f"benchmarks: {SHARED} is missing (WNUT-17, presidio-research)", file=sys.stderr)
        return 1
    results = {}
    for name, (kind, path, split) in DATASETS.items():
        results[name] = measure(
            labelled(kind, path, split=split, limit=args.limit, conversations=args.conversations)
        )
        print(f"{name}: done", file=sys.stderr)
    write_result("detection_transforms", results)
    columns = "char precision | char recall | entity recall | words masked | chars/s"
    print(f"| data | detectors | {columns} |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for data, result in results.items():
        for setting, m in result["rows"].items():
            speed = m.get("chars_per_second")
            print(
                f"| {data} | {setting} | {m['char_precision']:.3f} | {m['char_recall']:.3f} "
                f"| {m['entity_recall']:.3f} | {m['masked_word_share']:.1%} | "
                f"{'' if speed is None else f'{speed:,.0f}'} |"
            )
    print()
    print("| data | detectors | p | char precision | char recall | F1 | words masked |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for data, result in results.items():
        for setting, points in result["curve"].items():
            for m in points:
                precision, recall = m["char_precision"], m["char_recall"]
                f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
                print(
                    f"| {data} | {setting} | {m['p']:g} | {precision:.3f} | {recall:.3f} "
                    f"| {f1:.3f} | {m['masked_word_share']:.1%} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
