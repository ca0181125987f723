"""Realistic surrogates: shapes kept, one surrogate per entity in a conversation, unrelated
ones across conversations, never a PI value of the corpus, and the spans file that lets
later stages find them."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

import pytest

from components.anonymize import placeholder_view
from components.anonymize.config import AnonymizeConfig, SurrogateConfig
from components.anonymize.engine import AnonymizationPolicy, anonymize_corpus
from components.anonymize.factory import DEFAULT_SPEAKER_ROLES, build_surrogates
from components.anonymize.surrogates import SurrogateBook, SurrogateKey, Surrogates, shapes
from components.anonymize.surrogates.realistic import RealisticValues
from components.core.corpus import Conversation, Turn
from components.core.errors import ParamsError
from components.core.placeholders import NUMBERED_PLACEHOLDER
from components.ingest import normalized, salted_digest

SALT = "test-salt"
CONTEXT = ("", "")


def book(
    conversation_id: str = "c1",
    originals: frozenset[str] = frozenset(),
    digests: Iterable[str] = (),
) -> SurrogateBook:
    maker = Surrogates(SurrogateKey(SALT, frozenset(digests)), RealisticValues("en_US"))
    return maker.book(conversation_id, originals)


def render(b: SurrogateBook, info_type: str, surface: str, entity: str = "[X_1]") -> str:
    """A mention's surrogate, of a type that has a generator."""
    value = b.render(info_type, surface, entity, CONTEXT)
    assert value is not None
    return value


def test_every_variant_of_a_name_maps_to_the_parts_of_one_surrogate() -> None:
    b = book(originals=frozenset({"john", "smith"}))
    full = render(b, "PERSON_NAME", "John Smith", "[PERSON_NAME_1]")
    first, last = full.split()
    assert render(b, "PERSON_NAME", "John", "[PERSON_NAME_1]") == first
    assert render(b, "PERSON_NAME", "Mr. Smith", "[PERSON_NAME_1]") == f"Mr. {last}"
    assert render(b, "PERSON_NAME", "john's", "[PERSON_NAME_1]") == f"{first.lower()}'s"
    assert render(b, "PERSON_NAME", "J-O-H-N", "[PERSON_NAME_1]") == "-".join(first.upper())
    email = render(b, "EMAIL_ADDRESS", "john.smith@acme.com", "[EMAIL_ADDRESS_1]")
    assert email.startswith(f"{first.lower()}.{last.lower()}@")
    assert "acme" not in email and "john" not in email


def test_a_first_name_keeps_its_gender_and_lowercase_stays_lowercase() -> None:
    values = RealisticValues("en_US")
    for seed in range(20):
        b = book(f"c{seed}")
        assert values.names.gender(render(b, "PERSON_NAME", "Mary", "[P_1]")) != "male"
        assert render(b, "PERSON_NAME", "robert", "[P_2]").islower()


@pytest.mark.parametrize(
    ("info_type", "original", "shape"),
    [
        ("PHONE_NUMBER", "555-0143", r"\d{3}-\d{4}"),
        ("PHONE_NUMBER", "(212) 555 0143", r"\(\d{3}\) \d{3} \d{4}"),
        (
            "PHONE_NUMBER",
            "five five five one",
            r"(?:oh|one|two|three|four|five|six|seven|eight|nine)(?: \w+){3}",
        ),
        ("GENERIC_ID", "AB-1234", r"[A-Z]{2}-\d{4}"),
        ("US_SOCIAL_SECURITY_NUMBER", "123-45-6789", r"9\d\d-(?:0[1-9]|[1-4]\d)-\d{4}"),
        ("IP_ADDRESS", "10.0.0.12", r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}"),
        ("AGE", "42", r"[1-8]\d"),
        (
            "DATE_OF_BIRTH",
            "03/14/1985",
            r"(?:0[1-9]|1[0-2])/(?:0[1-9]|1[0-2])/(?:19[4-9]\d|200[0-5])",
        ),
        ("DATE_OF_BIRTH", "March 3rd, 1985", r"[A-Z][a-z]+ \d{1,2}(?:st|nd|rd|th), \d{4}"),
        ("MAC_ADDRESS", "00:1a:2b:3c:4d:5e", r"(?:[0-9a-f]{2}:){5}[0-9a-f]{2}"),
        ("LOCATION", "boston", r"[a-z .'-]+"),
    ],
)
def test_values_keep_their_shape(info_type: str, original: str, shape: str) -> None:
    for seed in range(5):
        value = render(book(f"c{seed}"), info_type, original, "[X_1]")
        assert value is not None and value != original
        assert re.fullmatch(shape, value), value


def test_card_numbers_and_ibans_are_well_formed() -> None:
    rng = random.Random(3)
    for _ in range(50):
        card = shapes.luhn_valid("4111 1111 1111 1111", rng)
        assert shapes.luhn_ok(card) and re.fullmatch(r"4\d{3}( \d{4}){3}", card)
        iban = shapes.iban_like("GB82 WEST 1234 5698 7654 32", rng)
        assert shapes.iban_ok(iban) and iban.startswith("GB") and len(iban) == 27
    assert not shapes.luhn_ok("4111 1111 1111 1112")
    assert not shapes.iban_ok("GB83 WEST 1234 5698 7654 32")


def test_spelled_letters_stay_spelled_and_spell_the_surrogate_name() -> None:
    b = book()
    name = render(b, "PERSON_NAME", "Mark", "[PERSON_NAME_1]")
    assert render(b, "PERSON_NAME", "m a r k", "[PERSON_NAME_1]") == " ".join(name.lower())


def test_surrogates_are_independent_across_conversations_and_reproducible() -> None:
    names = {render(book(f"c{i}"), "PERSON_NAME", "John Smith", "[P_1]") for i in range(30)}
    assert len(names) >= 25  # the same person, unrelated surrogates
    again = render(book("c7"), "PERSON_NAME", "John Smith", "[P_1]")
    assert again == render(book("c7"), "PERSON_NAME", "John Smith", "[P_1]")
    other_secret = Surrogates(SurrogateKey("another-salt"), RealisticValues("en_US"))
    different = [
        other_secret.book(f"c{i}", frozenset()).render(
            "PERSON_NAME", "John Smith", "[P_1]", CONTEXT
        )
        != render(book(f"c{i}"), "PERSON_NAME", "John Smith", "[P_1]")
        for i in range(10)
    ]
    assert sum(different) >= 8  # the secret, not the id alone, decides


def test_never_the_original_nor_any_inventory_value() -> None:
    values = RealisticValues("en_US")
    # every last name but three is a PI value of the corpus: surrogates come from those three
    allowed = set(values.names.last[:3])
    digests = {salted_digest(normalized(n), SALT) for n in values.names.last[3:]}
    for seed in range(30):
        b = book(f"c{seed}", originals=frozenset({"smith"}), digests=digests)
        last = render(b, "PERSON_NAME", "Mr. Smith", "[P_1]").split()[-1]
        assert last in allowed
    b = book(originals=frozenset({"ann", "lee"}))
    for _ in range(20):
        value = render(b, "PERSON_NAME", "Ann Lee", "[P_1]").lower()
        assert not {"ann", "lee"} & set(value.split())


def test_a_type_without_generator_returns_none() -> None:
    assert book().render("ETHNIC_GROUP", "Martian", "[ETHNIC_GROUP_1]", CONTEXT) is None


@pytest.mark.parametrize(
    ("key", "value"),
    [("method", "fancy"), ("locale", "xx_XX"), ("k", 0), ("radius", 0.0), ("radius", 3.0)],
)
def test_bad_surrogate_params_name_the_key(key: str, value: object) -> None:
    with pytest.raises(ParamsError, match=f"anonymize.surrogate.{key}"):
        SurrogateConfig(**{key: value})  # type: ignore[arg-type]


def call(conv_id: str) -> Conversation:
    return Conversation(
        conv_id,
        (
            Turn("Agent", "Thank you for calling. Who am I speaking with?"),
            Turn("Mark Kowalski", "Hi, this is Mark Kowalski. My email is mark.kowalski@acme.com."),
            Turn("Agent", "Thanks mark. Can you spell your surname? And your phone number?"),
            Turn("Mark Kowalski", "K-O-W-A-L-S-K-I. It's 555-201-3344."),
        ),
        context="customer_support",
        labels={"summary": "Mark Kowalski updated his email.", "purpose": "address_change"},
    )


@pytest.fixture(scope="module")
def surrogate_policy() -> AnonymizationPolicy:
    return AnonymizationPolicy(
        mode="surrogate",
        speaker_roles=DEFAULT_SPEAKER_ROLES,
        surrogates=build_surrogates(
            AnonymizeConfig(replacement="surrogate"),
            __import__("pathlib").Path(),
            SurrogateKey(SALT),
        ),
    )


def test_a_conversation_reads_as_a_real_one_with_one_surrogate_person(  # type: ignore[no-untyped-def]
    detector, surrogate_policy
) -> None:
    ((anonymized, replacements),) = list(anonymize_corpus([call("c1")], detector, surrogate_policy))
    record = anonymized.to_record()
    text = repr(record).lower()
    for value in ("kowalski", "mark", "acme", "555", "3344", "k-o-w"):
        assert value not in text, value
    assert not NUMBERED_PLACEHOLDER.search(text)
    speaker = str(anonymized.turns[1].speaker)
    first, last = speaker.split()
    assert f"this is {speaker}" in anonymized.turns[1].text
    assert anonymized.turns[3].speaker == speaker
    assert anonymized.labels["summary"].startswith(speaker)
    assert f"Thanks {first.lower()}." in anonymized.turns[2].text
    assert "-".join(last.upper()) in anonymized.turns[3].text
    assert f"{first.lower()}.{last.lower()}@" in anonymized.turns[1].text
    assert re.search(r"\b\d{3}-\d{3}-\d{4}\b", anonymized.turns[3].text)
    # the records say where each surrogate sits; they hold neither value nor surrogate
    records = [r.to_record() for r in replacements]
    assert {r["method"] for r in records} == {"surrogate"}
    assert speaker.lower() not in repr(records).lower()
    view = placeholder_view(anonymized, records)
    assert view.turns[1].text == "Hi, this is [PERSON_NAME_1]. My email is [EMAIL_ADDRESS_1]."
    assert view.turns[1].speaker == "[PERSON_NAME_1]"
    assert view.labels["summary"] == "[PERSON_NAME_1] updated his email."


def test_the_same_person_in_two_calls_gets_unrelated_surrogates(detector, surrogate_policy) -> None:  # type: ignore[no-untyped-def]
    (one, _), (two, _) = anonymize_corpus([call("c1"), call("c2")], detector, surrogate_policy)
    assert set(str(one.turns[1].speaker).split()).isdisjoint(str(two.turns[1].speaker).split())


def test_embedding_picks_among_the_nearest_candidates_in_context() -> None:
    from components.anonymize.surrogates.embedding import EmbeddingSource

    source = EmbeddingSource(RealisticValues("en_US"), k=3, radius=2.0)
    context = ("I moved to ", " last year and I love the weather there.")
    candidates = ["Springfield", "a banana", "the quarterly revenue report"]
    picks = {source.choose("Denver", candidates, random.Random(i), context) for i in range(20)}
    assert picks == set(candidates)  # radius 2 admits all of the k = 3
    near = EmbeddingSource(RealisticValues("en_US"), k=1, radius=2.0)
    assert near.choose("Denver", candidates, random.Random(0), context) == "Springfield"
    tight = EmbeddingSource(RealisticValues("en_US"), k=3, radius=1e-6)
    # none within the radius: the nearest
    assert tight.choose("Denver", candidates, random.Random(0), context) == "Springfield"


def test_embedding_surrogates_in_a_conversation(detector) -> None:  # type: ignore[no-untyped-def]
    config = AnonymizeConfig(replacement="surrogate", surrogate=SurrogateConfig(method="embedding"))
    policy = AnonymizationPolicy(
        mode="surrogate",
        speaker_roles=DEFAULT_SPEAKER_ROLES,
        surrogates=build_surrogates(config, __import__("pathlib").Path(), SurrogateKey(SALT)),
    )
    ((anonymized, replacements),) = list(anonymize_corpus([call("c1")], detector, policy))
    assert "kowalski" not in repr(anonymized.to_record()).lower()
    sources = {r.surrogate_source for r in replacements}
    assert "embedding" in sources and sources <= {"embedding", "realistic"}


def test_lm_proposes_names_the_detector_accepts_and_falls_back_when_none_pass(  # type: ignore[no-untyped-def]
    base_model_dir, detector
) -> None:
    from components.anonymize.surrogates.lm import LmSource, detector_check

    values = RealisticValues("en_US")
    context = ("Thanks for calling. Hi, my name is ", " and I am calling about my bill.")
    source = LmSource(values, base_model_dir, k=10, top1=True, check=detector_check(detector))
    name, how = source.first_name(random.Random(0), None, "Mark", context)
    assert how == "lm" and name.isalpha() and name.lower() != "mark"
    (spans,) = detector.detect([context[0] + name + context[1]])
    assert any(s.entity_type == "PERSON_NAME" for s in spans)
    refusing = LmSource(
        values,
        base_model_dir,
        10,
        False,
        check=lambda texts, places, info_type: [False] * len(texts),
    )
    refusing._proposer = source.proposer  # the loaded model, shared
    name, how = refusing.first_name(random.Random(0), None, "Mark", context)
    assert how == "realistic" and name in values.names.first_set
