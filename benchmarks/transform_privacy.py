"""The privacy of each transform's training text (docs: Other privacy transforms): the share of
the PI inventory's values that survive each detector setting's placeholders (and each
detector's characters per second on the corpus), and for fragments how many training examples
still hold two PI values of one conversation (a name beside its phone number), against whole
conversations.

    python -m benchmarks.transform_privacy [--conversations 60]

Reads the pipeline's raw corpus, salt and PI inventory (``make run``'s ingest); writes
benchmarks/results/transform_privacy.json and prints counts only, never text.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

# the offline environment and the checkout's paths come with the detection benchmarks
from benchmarks.detection_transforms import REPO, SETTINGS
from benchmarks.results import write_result

MIN_CHARS = 4  # export.pi_scan_min_chars: shorter values match too much by chance
SEEDS = (13, 14, 15)


def training_text(conversation: Any) -> str:
    """What a training example of the conversation may show: its context, its turns with
    their speakers, its labels."""
    turns = [f"{t.speaker}: {t.text}" if t.speaker else t.text for t in conversation.turns]
    labels = [str(v) for v in conversation.labels.values()]
    return "\n".join([conversation.context, *turns, *labels])


def surviving(conversations: Sequence[Any], inventory: list[Any], *, salt: str) -> dict[str, Any]:
    """Specific inventory values (``MIN_CHARS`` or longer) found in each conversation's
    training text: their share, and the share of conversations with any."""
    from components.ingest.pi_inventory import find_leaks

    by_conversation: dict[str, list[Any]] = {}
    for entry in inventory:
        if entry.specific and entry.n_chars >= MIN_CHARS:
            by_conversation.setdefault(entry.conversation_id, []).append(entry)
    total = found = leaky = 0
    for conversation in conversations:
        entries = by_conversation.get(conversation.id, [])
        leaks = {
            e.digest
            for e in find_leaks(
                training_text(conversation), entries, salt=salt, min_chars=MIN_CHARS
            )
        }
        total += len({e.digest for e in entries})
        found += len(leaks)
        leaky += bool(leaks)
    return {
        "values": total,
        "surviving": found,
        "surviving_share": round(found / total, 4) if total else 0.0,
        "conversations_with_any": round(leaky / len(conversations), 4),
    }


def pi_values(conversation: Any) -> list[str]:
    """The raw PI values the generator placed in the conversation's turns."""
    return [
        conversation.turns[p.turn].text[p.start : p.end]
        for p in conversation.pi
        if p.field == "text"
    ]


def linking(raw: Sequence[Any], sources: dict[str, Sequence[Any]]) -> dict[str, Any]:
    """For whole conversations and each fragment source: training examples, and those
    holding two different PI values of one conversation (a mean over ``SEEDS``)."""
    import spacy

    from components.train import FragmentExample, build_fragments, examples_linking_values
    from components.train.config import FragmentsConfig
    from components.train.fragments import Chunk

    values = {c.id: pi_values(c) for c in raw}
    result: dict[str, Any] = {}
    for name, conversations in sources.items():
        whole = [
            FragmentExample((Chunk(c.id, training_text(c), "whole", 0),)) for c in conversations
        ]
        result[f"whole conversations ({name})"] = {
            "examples": len(whole),
            "linking": examples_linking_values(whole, values),
        }
    config = FragmentsConfig()
    nlp = spacy.load(config.spacy_model)
    for name, conversations in sources.items():
        runs = []
        for seed in SEEDS:
            fragments = build_fragments(
                conversations, config, eval_fraction=0.0, seed=seed, nlp=nlp
            )
            examples = [*fragments.train, *fragments.evaluation]
            runs.append((len(examples), examples_linking_values(examples, values)))
        result[f"fragments ({name})"] = {
            "examples": round(sum(n for n, _ in runs) / len(runs), 1),
            "linking": round(sum(k for _, k in runs) / len(runs), 1),
            "linking_by_seed": [k for _, k in runs],
            "seeds": list(SEEDS),
        }
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=60, help="of the raw corpus")
    args = parser.parse_args()
    from components.anonymize.config import AnonymizeConfig
    from components.anonymize.engine import anonymize_corpus
    from components.anonymize.evaluation.sweep import Memo
    from components.anonymize.factory import (
        WORD_LEVEL_BUILDERS,
        anonymization_policy,
        build_detector,
        entity_detector,
    )
    from components.core import paths
    from components.core.corpus import load_corpus
    from components.ingest.pi_inventory import read_inventory

    corpus = REPO / paths.RAW_CORPUS
    if not corpus.is_file():
        print(f"benchmarks: {corpus} is missing (run make run first)", file=sys.stderr)
        return 1
    raw = load_corpus(corpus)[: args.conversations]
    salt = (REPO / paths.SALT).read_text().strip()
    inventory = read_inventory(REPO / paths.INVENTORY)
    config = AnonymizeConfig()
    policy = anonymization_policy(config, REPO)
    rows = {"raw": surviving(raw, inventory, salt=salt)}
    # each detector built once and its answers kept: a union re-reads nothing
    built = {"entities": Memo(entity_detector(config, REPO))}
    built |= {name: Memo(build(config, REPO)) for name, build in WORD_LEVEL_BUILDERS.items()}
    anonymized: dict[str, list[Any]] = {}
    for name, detectors in SETTINGS.items():
        setting = dataclasses.replace(config, detectors=detectors)
        detector = build_detector(setting, REPO, built=built)
        anonymized[name] = [c for c, _ in anonymize_corpus(raw, detector, policy=policy)]
        rows[name] = surviving(anonymized[name], inventory, salt=salt)
        print(f"{name}: done", file=sys.stderr)
    speed = {
        name: round(memo.chars / memo.seconds, 1) if memo.seconds else None
        for name, memo in built.items()
    }
    links = linking(raw, {"raw": raw, "anonymized": anonymized["entities"]})
    results = {"conversations": len(raw), "min_chars": MIN_CHARS, "survival": rows}
    results |= {"chars_per_second": speed, "linking": links}
    write_result("transform_privacy", results)
    _print_tables(rows, speed, links=links)
    return 0


def _print_tables(
    rows: dict[str, Any], speed: dict[str, float | None], *, links: dict[str, Any]
) -> None:
    """The three tables, in Markdown, for the docs."""
    print("| training text | inventory values surviving | conversations with any |")
    print("| --- | ---: | ---: |")
    for name, row in rows.items():
        print(
            f"| {name} | {row['surviving']}/{row['values']} ({row['surviving_share']:.1%}) "
            f"| {row['conversations_with_any']:.1%} |"
        )
    print()
    print("| detector | chars/s (each text read once, this machine) |")
    print("| --- | ---: |")
    for name, value in speed.items():
        print(f"| {name} | {'' if value is None else f'{value:,.0f}'} |")
    print()
    print("| training examples | examples | holding two PI values of one conversation |")
    print("| --- | ---: | ---: |")
    for name, row in links.items():
        print(f"| {name} | {row['examples']} | {row['linking']} |")


if __name__ == "__main__":
    sys.exit(main())
