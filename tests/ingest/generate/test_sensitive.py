"""The sensitivity corpus: facts planted and labelled by taxonomy path, exact offsets, the
three reference summaries, determinism."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from components.core.corpus import Conversation, conversation_from_record
from components.ingest import SETTINGS, load_taxonomy
from components.ingest.generate import generate_sensitive_corpus
from components.ingest.generate.sensitive_scripts import SENSITIVE_SCENARIOS

N = 48
SHIPPED = Path(__file__).parents[3] / "veiltune" / "policy" / "taxonomy.yaml"


@pytest.fixture(scope="module")
def corpus() -> list[Conversation]:
    return generate_sensitive_corpus(N, seed=13)


def test_every_setting_of_the_taxonomy_has_a_scenario_and_each_comes_in_turn(
    corpus: list[Conversation],
) -> None:
    assert sorted(s.setting for s in SENSITIVE_SCENARIOS) == sorted(SETTINGS)
    settings = [c.labels["setting"] for c in corpus]
    for start in range(0, N, len(SETTINGS)):  # each round of 12 holds every setting once
        assert sorted(settings[start : start + len(SETTINGS)]) == sorted(SETTINGS)


def test_facts_are_labelled_with_taxonomy_paths_at_exact_offsets(
    corpus: list[Conversation],
) -> None:
    taxonomy = load_taxonomy(SHIPPED)
    for conversation in corpus:
        assert conversation.sensitive, conversation.id
        for span in conversation.sensitive:
            assert span.path in taxonomy.paths
            assert taxonomy.setting(span.path) == conversation.labels["setting"]
            mention = conversation.turns[span.turn].text[span.start : span.end]
            assert mention.strip() == mention and len(mention) >= 3
        # the record validates against the taxonomy and round-trips
        record = conversation.to_record()
        assert conversation_from_record(record, "x", sensitive_paths=taxonomy.paths) == conversation


def test_personal_information_inside_a_fact_stays_inside_its_span(
    corpus: list[Conversation],
) -> None:
    nested = 0
    for conversation in corpus:
        for span in conversation.sensitive:
            for pi in conversation.pi:
                if pi.field != "text" or pi.turn != span.turn:
                    continue
                if pi.start < span.end and span.start < pi.end:
                    assert span.start <= pi.start and pi.end <= span.end
                    nested += 1
    assert nested  # the identifiers and social media calls hold a value inside a fact


def test_the_private_summary_abstracts_what_the_normal_and_leaking_ones_say(
    corpus: list[Conversation],
) -> None:
    by_scenario = {s.setting: s for s in SENSITIVE_SCENARIOS}
    for conversation in corpus:
        labels = conversation.labels
        scenario = by_scenario[labels["setting"]]
        said = [f.said for facts in scenario.facts.values() for f in facts]
        # a fact with a value in it ("social security number {ssn}") by its words before it
        assert any(f.split("{")[0] in labels["summary"] for f in said), conversation.id
        assert any(f.split("{")[0] in labels["summary_leaking"] for f in said), conversation.id
        worded = [f for f in said if "{" not in f]
        assert not any(f in labels["summary_private"] for f in worded), conversation.id
        assert not re.search(r"\d{4}", labels["summary_private"]), conversation.id  # no value
        assert labels["summary_private"] != labels["summary_leaking"]
        assert "[" not in labels["summary_private"] and "{" not in labels["summary_private"]


def test_facts_vary_and_the_corpus_is_deterministic(corpus: list[Conversation]) -> None:
    paths = Counter(s.path for c in corpus for s in c.sensitive)
    assert len(paths) >= 25  # the alternatives of each fact are drawn
    assert generate_sensitive_corpus(N, seed=13) == corpus
    assert generate_sensitive_corpus(12, seed=13) == corpus[:12]
    assert generate_sensitive_corpus(12, seed=14) != corpus[:12]
    assert generate_sensitive_corpus(0, seed=13) == []


def test_the_calls_categories_survive_anonymizing_and_the_gate_knows_their_context(
    corpus: list[Conversation],
) -> None:
    from components.anonymize.factory import known_class_labels
    from components.anonymize.fields import text_fields
    from components.gate.config import GateConfig

    known = known_class_labels({})
    contexts = GateConfig().known_contexts or []
    for conversation in corpus[:12]:
        scanned = {(f.kind, f.key) for f, _ in text_fields(conversation, known)}
        assert ("label", "setting") not in scanned  # a category, never scanned as text
        assert ("context", "") not in scanned
        assert conversation.context in contexts
