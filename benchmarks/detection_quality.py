"""Detection quality: every operating point on the data it was and was not calibrated on,
and ages in presidio-research's age templates.

    python -m benchmarks.detection_quality [--points recall,balanced,precision]
    python -m benchmarks.detection_quality --points balanced --spacy-model en_core_web_md

Reads ../shared/data (presidio-research, WNUT-17), or the folder $VEILTUNE_SHARED_DATA names;
writes benchmarks/results/detection_quality.json (detection_quality_<model>.json for a
spaCy model other than the default, measured with the default's calibration file: the
balanced point's thresholds do not involve the spaCy recognizer).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.results import write_result
from veiltune.cli import OFFLINE_ENVIRONMENT

for _key, _value in OFFLINE_ENVIRONMENT.items():
    os.environ.setdefault(_key, _value)

REPO = Path(__file__).resolve().parent.parent
# The larger labelled sets, beside the checkout (a user's clone has none: tests never need them)
SHARED = Path(os.environ.get("VEILTUNE_SHARED_DATA") or REPO.parent / "shared" / "data")
DATASETS = {
    # the quarter of WNUT-17 train that neither calibration nor the shipped NER saw
    "WNUT-17 train, held-out quarter (never tuned on)": (
        "wnut17",
        SHARED / "wnut17" / "wnut17train.conll",
        "heldout",
    ),
    "presidio-research, held-out templates": (
        "presidio_research",
        SHARED / "presidio_research" / "generated_large.json",
        "heldout",
    ),
    "WNUT-17 dev (calibrated on)": ("wnut17", SHARED / "wnut17" / "emerging.dev.conll", "all"),
    "presidio-research, tuning templates (calibrated on)": (
        "presidio_research",
        SHARED / "presidio_research" / "generated_large.json",
        "tuning",
    ),
    "embedded (calibrated on)": ("embedded", None, "all"),
    # the same held-out sentences as a speech recognizer writes them: no capitals, no
    # punctuation, digits and addresses said aloud, fillers (components/anonymize/evaluation/
    # speechlike.py)
    "presidio-research, held-out templates, speech-like": (
        "presidio_research",
        SHARED / "presidio_research" / "generated_large.json",
        "heldout+speech",
    ),
}
_AGE_SLOT = re.compile(r"\{\{age\}\}")
_OTHER_SLOT = re.compile(r"\{\{(\w+)\}\}")
_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty", 6: "sixty", 7: "seventy", 8: "eighty"}


def age_texts(n: int = 200, seed: int = 0) -> list[Any]:
    """presidio-research's templates with an ``{{age}}`` slot, filled with ages in digits and
    in words, each age labelled ``AGE``; the other slots get a stand-in name, labelled
    neutral (this set measures ages only)."""
    from components.anonymize.evaluation.datasets import NEUTRAL, GoldSpan, LabelledText

    lines = (SHARED / "presidio_research" / "templates.txt").read_text().splitlines()
    templates = [t for t in lines if _AGE_SLOT.search(t)]
    rng = random.Random(seed)
    items = []
    for i in range(n):
        template = templates[i % len(templates)]
        age = rng.randint(13, 89)
        spoken = rng.random() < 0.3 and age // 10 in _TENS
        value = f"{_TENS[age // 10]}-{_WORDS[age % 10]}" if spoken and age % 10 else str(age)
        value = _TENS[age // 10] if spoken and not age % 10 else value
        text, gold = "", []
        for piece in re.split(r"(\{\{\w+\}\})", template):
            slot = _OTHER_SLOT.fullmatch(piece)
            filler = value if piece == "{{age}}" else "Dana" if slot else piece
            if slot:
                gold.append(
                    GoldSpan(
                        len(text), len(text) + len(filler), "AGE" if piece == "{{age}}" else NEUTRAL
                    )
                )
            text += filler
        items.append(LabelledText(f"age-{i}", text, tuple(gold)))
    return items


def measure(config: Any) -> dict[str, Any]:
    """Every set of ``DATASETS`` and the ages, detected with ``config`` (an AnonymizeConfig)."""
    from components.anonymize.evaluation.datasets import load_labelled
    from components.anonymize.evaluation.run import evaluate_detection
    from components.anonymize.evaluation.speechlike import speech_like
    from components.anonymize.factory import anonymization_policy, build_detector

    detector, policy = build_detector(config, REPO), anonymization_policy(config, REPO)
    rows: dict[str, Any] = {}
    for name, (kind, path, split_view) in DATASETS.items():
        split, _, view = split_view.partition("+")
        items = load_labelled(kind, path, limit=None, split=split)
        if view == "speech":
            items = [speech_like(item) for item in items]
        metrics, _ = evaluate_detection(
            items, detector, policy=policy, batch_size=config.batch_size
        )
        rows[name] = metrics
    metrics, _ = evaluate_detection(
        age_texts(), detector, policy=policy, batch_size=config.batch_size
    )
    rows["ages (presidio-research age templates)"] = metrics
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", default="recall,balanced,precision")
    parser.add_argument("--spacy-model", default=None, help="e.g. en_core_web_md")
    parser.add_argument("--ner-model", default=None, help="anonymize.ner.model, e.g. rampart")
    parser.add_argument("--calibration", default=None, help="anonymize.calibration")
    parser.add_argument("--name", default=None, help="the results file's name")
    args = parser.parse_args()
    if not (SHARED / "wnut17").is_dir():
        print(f"benchmarks: {SHARED} is missing (WNUT-17, presidio-research)", file=sys.stderr)
        return 1
    from components.anonymize.config import AnonymizeConfig

    default = AnonymizeConfig()
    config = replace(
        default,
        spacy_model=args.spacy_model or default.spacy_model,
        ner=replace(default.ner, model=args.ner_model or default.ner.model),
        calibration=args.calibration or default.calibration,
    )
    results = {
        point: measure(replace(config, operating_point=point)) for point in args.points.split(",")
    }
    name = args.name or "detection_quality"
    if not args.name and config.spacy_model != default.spacy_model:
        name += f"_{config.spacy_model}"
    write_result(name, results)
    print("| data | point | char precision | char recall | entity recall | person recall |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for name in [*DATASETS, "ages (presidio-research age templates)"]:
        for point, rows in results.items():
            m = rows[name]
            person = m["entity_recall_by_type"].get("PERSON_NAME", {}).get("recall", "")
            print(
                f"| {name} | {point} | {m['char_precision']:.3f} | {m['char_recall']:.3f} "
                f"| {m['entity_recall']:.3f} | {person if person == '' else f'{person:.3f}'} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
