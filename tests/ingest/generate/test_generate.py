"""The generated call corpus: determinism, exact PI ground truth, ASR noise, PI-free labels."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter, defaultdict
from itertools import pairwise

import pytest

from components.core.corpus import Conversation, PiSpan, conversation_from_record
from components.core.errors import ParamsError
from components.ingest.generate import ASR_NOISE_POLICY, generate_corpus
from components.ingest.generate import templates as tpl
from components.ingest.generate import vocabulary as vocab
from components.ingest.generate.asr import number_words, year_words

CONTEXTS = {"customer_support", "sales", "internal_meeting", "one_to_one", "voicemail"}
PI_TYPES = {
    "PERSON_NAME",
    "ORGANIZATION_NAME_SPEAKER",  # every organization here employs a speaker
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "STREET_ADDRESS",
    "LOCATION",
    "CREDIT_CARD_NUMBER",
    "US_SOCIAL_SECURITY_NUMBER",
    "IP_ADDRESS",
    "URL",
    "DATE_OF_BIRTH",
    "USER_NAME",
    "GENERIC_ID",
}
DIGIT_WORD = r"(?:zero|oh|one|two|three|four|for|five|six|seven|eight|nine|double)"
SPOKEN_DIGITS = re.compile(rf"\b{DIGIT_WORD}(?:,? {DIGIT_WORD}){{3,}}\b")
SPELLED = re.compile(r"\b[A-Za-z](?:-[A-Za-z0-9]){2,}\b")
NAME_LIKE = {
    "PERSON_NAME",
    "ORGANIZATION_NAME_SPEAKER",
    "LOCATION",
    "STREET_ADDRESS",
    "DATE_OF_BIRTH",
}


@pytest.fixture(scope="module")
def corpus() -> list[Conversation]:
    return generate_corpus(300, 13)


def surface(conversation: Conversation, span: PiSpan) -> str:
    target = getattr(conversation.turns[span.turn], span.field) or ""
    return target[span.start : span.end]


def text_mentions(corpus: list[Conversation]) -> list[tuple[Conversation, PiSpan, str]]:
    return [(c, s, surface(c, s)) for c in corpus for s in c.pi if s.field == "text"]


def is_spelled(text: str) -> bool:
    return bool(SPELLED.search(text) or re.fullmatch(r"[A-Za-z]( [A-Za-z])+", text))


def mask_spans(conversation: Conversation, index: int) -> str:
    """The text of a turn with its PI spans blanked out."""
    masked = list(conversation.turns[index].text)
    for span in conversation.pi:
        if span.turn == index and span.field == "text":
            masked[span.start : span.end] = " " * (span.end - span.start)
    return "".join(masked)


def is_noisy(entity_type: str, text: str) -> bool:
    """Whether a mention is in a spoken, spelled or lowercased (ASR) form."""
    if SPOKEN_DIGITS.search(text) or SPELLED.search(text) or re.search(r" (dot|at) ", text):
        return True
    if entity_type == "GENERIC_ID":
        return bool(re.search(r"[a-z]", text))
    return entity_type in NAME_LIKE and text == text.lower() and bool(re.search(r"[a-z]", text))


def test_same_seed_gives_identical_records_and_another_seed_does_not() -> None:
    first = [c.to_record() for c in generate_corpus(40, 5)]
    again = [c.to_record() for c in generate_corpus(40, 5)]
    other = [c.to_record() for c in generate_corpus(40, 6)]
    assert first == again
    assert first != other
    assert [c.to_record() for c in generate_corpus(20, 5)] == first[:20]


# sha256 of generate_corpus(40, 13)'s records as JSON, computed before the dialogue scripts
# moved from a Python string to scripts.txt (package data): the move changed no byte. A new
# script line, vocabulary word or Faker release changes it; then check the change is meant.
PINNED_CORPUS_SHA256 = "14894a96573b65bb3f9e740e11e9d26b0cddd0fe1fc5abe40dee07fd039930e3"


def test_the_corpus_of_a_seed_is_pinned_byte_for_byte() -> None:
    records = [c.to_record() for c in generate_corpus(40, 13)]
    text = json.dumps(records, ensure_ascii=False)
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == PINNED_CORPUS_SHA256


def test_ids_contexts_and_shape(corpus: list[Conversation]) -> None:
    assert [c.id for c in corpus] == [f"conv-{i:05d}" for i in range(1, 301)]
    assert {c.context for c in corpus} == CONTEXTS
    assert not any(c.plain for c in corpus)
    for conversation in corpus:
        speakers = {t.speaker for t in conversation.turns}
        if conversation.context == "voicemail":
            assert 1 <= len(conversation.turns) <= 5
        else:
            assert 6 <= len(conversation.turns) <= 18, conversation.id
            assert len(speakers) >= 2, conversation.id
        assert all(t.speaker and t.text.strip() for t in conversation.turns)


def test_every_span_is_exact(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        for span in conversation.pi:
            target = getattr(conversation.turns[span.turn], span.field)
            assert 0 <= span.start < span.end <= len(target), (conversation.id, span)
            text = surface(conversation, span)
            assert text == text.strip() and text, (conversation.id, span)
            assert text[0].isalnum() and text[-1].isalnum(), (conversation.id, text)
            assert span.entity_type in PI_TYPES


def test_spans_in_a_turn_do_not_overlap(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        by_turn: dict[tuple[int, str], list[PiSpan]] = defaultdict(list)
        for span in conversation.pi:
            by_turn[(span.turn, span.field)].append(span)
        for spans in by_turn.values():
            ordered = sorted(spans, key=lambda s: s.start)
            assert all(a.end <= b.start for a, b in pairwise(ordered))


def test_every_speaker_label_is_a_labelled_person(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        speaker_spans = {s.turn: s for s in conversation.pi if s.field == "speaker"}
        assert set(speaker_spans) == set(range(len(conversation.turns)))
        for index, turn in enumerate(conversation.turns):
            span = speaker_spans[index]
            assert (span.start, span.end) == (0, len(turn.speaker or ""))
            assert span.entity_type == "PERSON_NAME"


def test_all_pi_types_appear(corpus: list[Conversation]) -> None:
    assert {s.entity_type for c in corpus for s in c.pi} == PI_TYPES


def compact(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.lower())


def test_entity_keys_are_shared_across_mentions(corpus: list[Conversation]) -> None:
    multi_surface = 0
    for conversation in corpus:
        mentions: dict[str, list[str]] = defaultdict(list)
        types: dict[str, set[str]] = defaultdict(set)
        for span in conversation.pi:
            mentions[span.entity].append(surface(conversation, span))
            types[span.entity].add(span.entity_type)
        for key, surfaces in mentions.items():
            assert len(types[key]) == 1, (conversation.id, key)
            full = [m for m in surfaces if re.fullmatch(r"[A-Za-z]+ [A-Za-z]+", m)]
            if types[key] == {"PERSON_NAME"} and full:
                # "Mark Kowalski", "mark", "K-O-W-A-L-S-K-I": all pieces of one name
                assert all(compact(m) in compact(full[0]) for m in surfaces), (key, surfaces)
            multi_surface += len(set(surfaces)) >= 2
    assert multi_surface >= 300


def test_customer_is_named_in_full_then_by_first_name(corpus: list[Conversation]) -> None:
    for conversation in (c for c in corpus if c.context == "customer_support"):
        # the customer answers the agent's greeting, so speaks turn 1
        key = next(s.entity for s in conversation.pi if s.turn == 1 and s.field == "speaker")
        spans = [s for s in conversation.pi if s.entity == key and s.field == "text"]
        surfaces = [surface(conversation, s) for s in spans]
        assert 2 <= len(spans) <= 6, (conversation.id, surfaces)
        assert " " in surfaces[0], (conversation.id, surfaces)  # first and last name
        assert all(" " not in m for m in surfaces[1:] if not is_spelled(m)), surfaces


def test_noisy_forms_exist_and_are_labelled(corpus: list[Conversation]) -> None:
    mentions = text_mentions(corpus)
    by_type: dict[str, list[str]] = defaultdict(list)
    for _, span, text in mentions:
        by_type[span.entity_type].append(text)
    assert any(re.fullmatch(r"[A-Z](?:-[A-Z]){2,}", t) for t in by_type["PERSON_NAME"])
    assert any(t.islower() for t in by_type["PERSON_NAME"])
    for entity_type in ("PHONE_NUMBER", "CREDIT_CARD_NUMBER", "GENERIC_ID"):
        assert any(SPOKEN_DIGITS.fullmatch(t) for t in by_type[entity_type]), entity_type
    digit_runs = [t for ts in by_type.values() for t in ts if SPOKEN_DIGITS.search(t)]
    assert any(re.search(r"\boh\b", t) for t in digit_runs)
    assert any(re.search(r"\bfor\b", t) for t in digit_runs)
    assert any(
        re.fullmatch(r"[a-z\d]+( dot [a-z\d]+)*( \w+)* at \w+ dot com", t)
        for t in by_type["EMAIL_ADDRESS"]
    )
    assert any(SPELLED.search(t) for t in by_type["EMAIL_ADDRESS"])
    assert any(re.search(r"\d{3}[ -]\d{3}[ -]\d{4}", t) for t in by_type["PHONE_NUMBER"])
    turns = [t.text for c in corpus for t in c.turns]
    assert sum(t == t.lower() for t in turns) > 0.05 * len(turns)


def test_default_noise_is_moderate(corpus: list[Conversation]) -> None:
    mentions = text_mentions(corpus)
    noisy = sum(is_noisy(span.entity_type, text) for _, span, text in mentions)
    assert 0.22 <= noisy / len(mentions) <= 0.38


def test_no_noise_writes_every_number_with_digits() -> None:
    quiet = {key: 0.0 for key in ASR_NOISE_POLICY}
    lowercase_turns = n_turns = 0
    for conversation in generate_corpus(120, 3, noise=quiet):
        lowercase_turns += sum(t.text == t.text.lower() for t in conversation.turns)
        n_turns += len(conversation.turns)
        for span in conversation.pi:
            if span.entity_type in {"PHONE_NUMBER", "CREDIT_CARD_NUMBER", "IP_ADDRESS"}:
                assert re.fullmatch(r"[\d .-]+", surface(conversation, span))
    assert lowercase_turns < 0.02 * n_turns  # only turns that are just an email or a number


@pytest.mark.parametrize("noise", [{"typo_rate": 0.1}, {"digits_spoken": 1.5}])
def test_bad_noise_policy_is_rejected(noise: dict[str, float]) -> None:
    with pytest.raises(ParamsError):
        generate_corpus(1, 0, noise=noise)


def test_no_name_is_left_unlabelled_in_text(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        words = {
            w.lower()
            for s in conversation.pi
            if s.entity_type == "PERSON_NAME" and not is_spelled(surface(conversation, s))
            for w in surface(conversation, s).split()
        }
        for index in range(len(conversation.turns)):
            rest = mask_spans(conversation, index).lower()
            leaked = [w for w in words if re.search(rf"\b{re.escape(w)}\b", rest)]
            assert not leaked, (conversation.id, index, leaked)


def test_labels_are_complete_and_free_of_pi(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        labels = conversation.labels
        assert set(labels) == {"summary", "action_items", "purpose", "outcome"}
        assert labels["purpose"] in vocab.PURPOSES[conversation.context]
        assert labels["outcome"] in vocab.OUTCOMES
        assert labels["summary"] and labels["action_items"]
        label_text = " ".join([labels["summary"], *labels["action_items"]]).lower()
        for span in conversation.pi:
            pi_text = surface(conversation, span).lower()
            assert not re.search(rf"\b{re.escape(pi_text)}\b", label_text), (
                conversation.id,
                pi_text,
            )
        assert not re.search(r"\d{4}|@", label_text)


def test_round_trip_through_the_corpus_schema(corpus: list[Conversation]) -> None:
    for conversation in corpus:
        assert conversation_from_record(conversation.to_record(), "x") == conversation


def test_corpus_is_varied(corpus: list[Conversation]) -> None:
    assert len({tuple(t.text for t in c.turns) for c in corpus}) == len(corpus)
    assert len({(c.labels["purpose"], c.labels["outcome"]) for c in corpus}) >= 40
    openings = Counter(c.turns[0].text for c in corpus)
    assert openings.most_common(1)[0][1] < 30


def test_templates_are_well_formed() -> None:
    counts = Counter(scenario.context for scenario in tpl.SCENARIOS)
    assert set(counts) == CONTEXTS and min(counts.values()) >= 6
    lines = [line for scenario in tpl.SCENARIOS for line in scenario.script]
    lines += [line for s in tpl.SCENARIOS for e in s.endings for line in e.script]
    lines += [line for scripts in tpl.BLOCKS.values() for script in scripts for line in script]
    assert {line.block for line in lines if line.block} <= set(tpl.BLOCKS)
    assert set(vocab.CLOSING_BLOCKS.values()) <= set(tpl.BLOCKS)


def test_templates_reject_personal_information_in_labels() -> None:
    with pytest.raises(ValueError, match="FILL_VALUES"):
        tpl._read("scenario: sales renewal\nsummary: Called {cust}.\nending: resolved\n")


@pytest.mark.parametrize(
    ("year", "words"),
    [
        (1985, "nineteen eighty five"),
        (1905, "nineteen oh five"),
        (1900, "nineteen hundred"),
        (2000, "two thousand"),
        (2003, "two thousand three"),
    ],
)
def test_year_words(year: int, words: str) -> None:
    assert year_words(year) == words


@pytest.mark.parametrize(
    ("day", "words"), [(1, "first"), (12, "twelfth"), (22, "twenty second"), (30, "thirtieth")]
)
def test_ordinal_words(day: int, words: str) -> None:
    assert number_words(day, ordinal=True) == words


def test_three_hundred_conversations_are_fast() -> None:
    start = time.perf_counter()
    generate_corpus(300, 99)
    assert time.perf_counter() - start < 2.0
