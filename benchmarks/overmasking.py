"""Over-masking on human-written dialogues (docs: Policies and detection, Results): how many
name, place, organization and username spans the detector puts on a single lowercase common
English word ("pay my bill", "mark the account"), per 10,000 words, beside how many
title-case person spans it finds, and how many of those are known names (every word a first
name or surname of the name gazetteer: "Anaphylactic Shock" is a title-case span, no name).

    python -m benchmarks.overmasking [--limit 500]

DialogSum's dev dialogues (../shared/data/dialogsum, or $VEILTUNE_SHARED_DATA): people wrote
them, and their transcribers capitalized names, so a lowercase common word in a span is a
word masked for nothing. The spans go through the whole engine (every recognizer, then the
names propagated in each conversation), as `veiltune anonymize` sees them, with the
evidence everyday words need (docs: Policies and detection) and without it. Writes
benchmarks/results/overmasking.json: counts and the words most often masked (dictionary
words, never a name of the data).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from benchmarks.detection_quality import REPO, SHARED
from benchmarks.results import write_result

DIALOGSUM_DEV = SHARED / "dialogsum" / "dialogsum.dev.jsonl"
COMMON_MIN_ZIPF = 3.0  # "detour" (3.0) and anything more frequent is a common word
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def is_common_lowercase_word(surface: str) -> bool:
    """A span's surface that is one lowercase word of everyday English."""
    from components.core.lexicon import zipf

    word = surface.strip(" .,;:!?'\"")
    return bool(_WORD.fullmatch(word)) and word.islower() and zipf(word) >= COMMON_MIN_ZIPF


def count_spans(conversations: Sequence[Any], detector: Any, *, policy: Any) -> dict[str, Any]:
    """Words, spans, common-lowercase-word spans (by word) and title-case name spans in the
    conversations' turns."""
    from components.anonymize.engine import detect_batch
    from components.anonymize.evidence import NAME_TYPES
    from components.anonymize.recognizers.name_gazetteer import common_surnames, english_first_names
    from components.core.lexicon import title_case

    known = english_first_names() | common_surnames()
    words = spans = names = known_names = 0
    common: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    for fields, found in detect_batch(conversations, detector, policy=policy):
        for (field, text), field_spans in zip(fields, found, strict=True):
            if field.kind != "text":
                continue
            words += len(_WORD.findall(text))
            for span in field_spans:
                spans += 1
                surface = text[span.start : span.end]
                if span.entity_type in NAME_TYPES and is_common_lowercase_word(surface):
                    common[surface.strip(" .,;:!?'\"")] += 1
                    sources[f"{span.source or 'unknown'} {span.entity_type}"] += 1
                elif span.entity_type == "PERSON_NAME" and all(
                    title_case(w) for w in _WORD.findall(surface)
                ):
                    names += 1
                    known_names += all(w.lower() in known for w in _WORD.findall(surface))
    n_common = sum(common.values())
    return {
        "words": words,
        "spans": spans,
        "common_lowercase_word_spans": n_common,
        "common_lowercase_word_spans_per_10k_words": round(10_000 * n_common / max(words, 1), 2),
        "title_case_name_spans": names,
        "title_case_known_name_spans": known_names,
        "common_lowercase_word_spans_by_source": dict(sources.most_common()),
        "most_masked_common_words": dict(common.most_common(25)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=500, help="dialogues at most")
    args = parser.parse_args()
    if not DIALOGSUM_DEV.is_file():
        print(f"benchmarks: {DIALOGSUM_DEV} is missing", file=sys.stderr)
        return 1
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.factory import anonymization_policy, build_detector
    from components.core.jsonio import iter_jsonl
    from components.ingest.dialogsum import dialogsum_conversation

    conversations = [
        dialogsum_conversation(obj, f"{DIALOGSUM_DEV}:{line}")
        for line, obj in iter_jsonl(DIALOGSUM_DEV)
    ][: args.limit]
    config = AnonymizeConfig()
    detector = build_detector(config, REPO)
    without = replace(config, common_word_min_zipf=None)  # every span stands, as before
    figures = {
        "data": f"DialogSum dev, {len(conversations)} dialogues",
        **count_spans(conversations, detector, policy=anonymization_policy(config, REPO)),
        "without_evidence": count_spans(
            conversations, detector, policy=anonymization_policy(without, REPO)
        ),
    }
    print(write_result("overmasking", figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
