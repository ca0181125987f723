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
from components.anonymize.engine import anonymize_corpus
from components.anonymize.factory import DEFAULT_SPEAKER_ROLES, build_surrogates
from components.anonymize.policy import AnonymizationPolicy
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
    *,
    digests: Iterable[str] = (),
) -> SurrogateBook:
    maker = Surrogates(SurrogateKey(SALT, frozenset(digests)), RealisticValues("en_US"))
    return maker.book(conversation_id, originals)


def render(b: SurrogateBook, info_type: str, *, surface: str, entity: str = "[X_1]") -> str:
    """A mention's surrogate, of a type that has a generator."""
    value = b.render(info_type, surface, entity=entity, context=CONTEXT)
    assert value is not None
    return value


def test_every_variant_of_a_name_maps_to_the_parts_of_one_surrogate() -> None:
    b = book(originals=frozenset({"john", "smith"}))
    full = render(b, "PERSON_NAME", surface="John Smith", entity="[PERSON_NAME_1]")
    first, last = full.split()
    assert render(b, "PERSON_NAME", surface="John", entity="[PERSON_NAME_1]") == first
    assert render(b, "PERSON_NAME", surface="Mr. Smith", entity="[PERSON_NAME_1]") == f"Mr. {last}"
    assert (
        render(b, "PERSON_NAME", surface="john's", entity="[PERSON_NAME_1]") == f"{first.lower()}'s"
    )
    assert render(b, "PERSON_NAME", surface="J-O-H-N", entity="[PERSON_NAME_1]") == "-".join(
        first.upper()
    )
    email = render(b, "EMAIL_ADDRESS", surface="john.smith@acme.com", entity="[EMAIL_ADDRESS_1]")
    assert email.startswith(f"{first.lower()}.{last.lower()}@")
    assert "acme" not in email and "john" not in email


def test_a_first_name_keeps_its_gender_and_lowercase_stays_lowercase() -> None:
    values = RealisticValues("en_US")
    for seed in range(20):
        b = book(f"c{seed}")
        assert (
            values.names.gender(render(b, "PERSON_NAME", surface="Mary", entity="[P_1]")) != "male"
        )
        assert render(b, "PERSON_NAME", surface="robert", entity="[P_2]").islower()


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
def test_values_keep_their_shape(info_type: str, original: str, *, shape: str) -> None:
    for seed in range(5):
        value = render(book(f"c{seed}"), info_type, surface=original, entity="[X_1]")
        assert value is not None and value != original
        assert re.fullmatch(shape, value), value


_NAME = r"[A-Z][a-z]+"
_PLACE = r"[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*"
_SPOKEN_DIGIT = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"


# An address keeps its parts in place, each a realistic value of its kind: a house number of
# the same width that is never 0 nor starts with 0, a street name, its street and unit words,
# the city, state and postal code, the separators and the casing.
@pytest.mark.parametrize(
    ("original", "shape"),
    [
        ("12 Oak Street", rf"[1-9]\d {_NAME} Street"),
        ("7 Elm St.", rf"[1-9] {_NAME} St\."),
        ("9842 Jefferson Drive", rf"[1-9]\d{{3}} {_NAME} Drive"),
        ("12 Court Street", rf"[1-9]\d {_NAME} Street"),  # "Court" is the street's name
        (
            "350 5th Avenue, New York, NY 10118",
            rf"[1-9]\d\d [1-9](?:st|nd|rd|th) Avenue, {_PLACE}, [A-Z]{{2}} \d{{5}}",
        ),
        ("12 Oak Street, Boston", rf"[1-9]\d {_NAME} Street, {_PLACE}"),
        (
            "2197 Meadow Street Apt 34, Nashville",
            rf"[1-9]\d{{3}} {_NAME} Street Apt [1-9]\d, {_PLACE}",
        ),
        (
            "3 Pine Road, Apt. 4B, Denver, CO 80202",
            rf"[1-9] {_NAME} Road, Apt\. [1-9][A-Z], {_PLACE}, [A-Z]{{2}} \d{{5}}",
        ),
        (
            "82 Maidstone Road\n Apt. 224\n WELLINGTON MARSH\n Armenia 03622",
            r"[1-9]\d [A-Z][a-z]+ Road\n Apt\. [1-9]\d\d\n [A-Z][A-Z -]+\n Armenia \d{5}",
        ),
        ("4144 elm lane apartment 26", r"[1-9]\d{3} [a-z]+ lane apartment [1-9]\d"),
        (
            "nine three eight nine chestnut street",
            rf"(?!zero|oh){_SPOKEN_DIGIT}(?: {_SPOKEN_DIGIT}){{3}} [a-z]+ street",
        ),
        ("Via Capo le Case 143, Calino", rf"Via {_NAME} [1-9]\d\d, {_PLACE}"),
        ("Willem Barentszweg 177", r"[A-Z][a-z]+weg [1-9]\d\d"),
        (
            "the corner of Ilichova 50 and Salcido Street",
            rf"the corner of {_NAME} [1-9]\d and {_NAME} Street",
        ),
    ],
)
def test_an_address_keeps_its_parts_and_a_plausible_number(original: str, shape: str) -> None:
    kept = {"street", "st", "drive", "road", "avenue", "apt", "apartment", "lane", "via", "weg"}
    kept |= {"armenia"}  # a country names nobody
    kept |= {"the", "corner", "of", "and"}
    original_words = set(re.findall(r"\b[^\W\d_]{2,}\b", original.lower()))
    for seed in range(20):
        b = book(f"c{seed}", originals=frozenset(original_words))
        value = render(b, "STREET_ADDRESS", surface=original)
        assert re.fullmatch(shape, value), value
        assert set(re.findall(r"\b[^\W\d_]{2,}\b", value.lower())) & original_words <= kept, value


@pytest.mark.parametrize(
    ("number", "shape"),
    [
        ("0", r"[1-9]"),
        ("00", r"[1-9]\d"),
        ("07", r"[1-9]\d"),
        ("9842", r"[1-9]\d{3}"),
        ("12B", r"[1-9]\d[A-Z]"),
        ("12-14", r"[1-9]\d-[1-9]\d"),
        ("one oh five", rf"(?!oh|zero){_SPOKEN_DIGIT} {_SPOKEN_DIGIT} {_SPOKEN_DIGIT}"),
    ],
)
def test_a_house_number_is_never_zero_nor_led_by_zero(number: str, shape: str) -> None:
    rng = random.Random(0)
    for _ in range(200):
        value = shapes.house_number_like(number, rng)
        assert re.fullmatch(shape, value), value


def test_an_address_surrogate_is_the_same_for_the_same_salt() -> None:
    original = "3 Pine Road, Apt. 4B, Denver, CO 80202"
    first = [render(book(f"c{i}"), "STREET_ADDRESS", surface=original) for i in range(10)]
    assert first == [render(book(f"c{i}"), "STREET_ADDRESS", surface=original) for i in range(10)]
    assert len(set(first)) == 10
    b = book()
    assert render(b, "STREET_ADDRESS", surface=original, entity="[STREET_ADDRESS_1]") == render(
        b, "STREET_ADDRESS", surface=original, entity="[STREET_ADDRESS_1]"
    )


def test_a_street_and_a_city_are_the_same_wherever_the_conversation_says_them() -> None:
    for seed in range(10):
        b = book(f"c{seed}", originals=frozenset({"lincoln", "street", "anchorage"}))
        street = render(
            b, "STREET_ADDRESS", surface="1257 Lincoln Street", entity="[STREET_ADDRESS_1]"
        )
        city = render(b, "LOCATION", surface="Anchorage", entity="[LOCATION_1]")
        full = "1257 Lincoln Street, Anchorage"
        assert (
            render(b, "STREET_ADDRESS", surface=full, entity="[STREET_ADDRESS_2]")
            == f"{street}, {city}"
        )
        lower = render(
            b, "STREET_ADDRESS", surface="1257 lincoln street", entity="[STREET_ADDRESS_3]"
        )
        assert lower == street.lower()
    for seed in range(10):
        b = book(f"c{seed}", originals=frozenset({"oak", "boston", "elm", "street"}))
        city = render(b, "LOCATION", surface="boston", entity="[LOCATION_1]")
        address = render(
            b, "STREET_ADDRESS", surface="12 Oak Street, Boston", entity="[STREET_ADDRESS_1]"
        )
        assert address.endswith(", " + city.title()), (city, address)
        other = render(
            b, "STREET_ADDRESS", surface="4 Elm Street\nBOSTON", entity="[STREET_ADDRESS_2]"
        )
        assert other.endswith("\n" + city.upper()), (city, other)
        b = book(f"c{seed}")
        address = render(
            b, "STREET_ADDRESS", surface="12 Oak Street, Boston", entity="[STREET_ADDRESS_1]"
        )
        assert (
            render(b, "LOCATION", surface="Boston", entity="[LOCATION_1]") == address.split(", ")[1]
        )


def test_an_address_never_holds_a_city_of_the_inventory() -> None:
    original = "12 Oak Street, Boston"
    # a conversation whose first draw has a two-word city (a run of words, not one word)
    seed, first = next(
        (seed, value)
        for seed in range(100)
        if " "
        in (value := render(book(f"c{seed}"), "STREET_ADDRESS", surface=original)).split(", ")[1]
    )
    city = first.split(", ")[1]
    digests = {salted_digest(normalized(city), SALT)}
    again = render(book(f"c{seed}", digests=digests), "STREET_ADDRESS", surface=original)
    assert again.split(", ")[1] != city, again


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
    name = render(b, "PERSON_NAME", surface="Mark", entity="[PERSON_NAME_1]")
    assert render(b, "PERSON_NAME", surface="m a r k", entity="[PERSON_NAME_1]") == " ".join(
        name.lower()
    )


def test_surrogates_are_independent_across_conversations_and_reproducible() -> None:
    names = {
        render(book(f"c{i}"), "PERSON_NAME", surface="John Smith", entity="[P_1]")
        for i in range(30)
    }
    assert len(names) >= 25  # the same person, unrelated surrogates
    again = render(book("c7"), "PERSON_NAME", surface="John Smith", entity="[P_1]")
    assert again == render(book("c7"), "PERSON_NAME", surface="John Smith", entity="[P_1]")
    other_secret = Surrogates(SurrogateKey("another-salt"), RealisticValues("en_US"))
    different = [
        other_secret.book(f"c{i}", frozenset()).render(
            "PERSON_NAME", "John Smith", entity="[P_1]", context=CONTEXT
        )
        != render(book(f"c{i}"), "PERSON_NAME", surface="John Smith", entity="[P_1]")
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
        last = render(b, "PERSON_NAME", surface="Mr. Smith", entity="[P_1]").split()[-1]
        assert last in allowed
    b = book(originals=frozenset({"ann", "lee"}))
    for _ in range(20):
        value = render(b, "PERSON_NAME", surface="Ann Lee", entity="[P_1]").lower()
        assert not {"ann", "lee"} & set(value.split())


def test_a_type_without_generator_returns_none() -> None:
    assert (
        book().render("ETHNIC_GROUP", "Martian", entity="[ETHNIC_GROUP_1]", context=CONTEXT) is None
    )


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
            key=SurrogateKey(SALT),
        ),
    )


def test_a_conversation_reads_as_a_real_one_with_one_surrogate_person(  # type: ignore[no-untyped-def]
    detector, surrogate_policy
) -> None:
    ((anonymized, replacements),) = list(
        anonymize_corpus([call("c1")], detector, policy=surrogate_policy)
    )
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
    (one, _), (two, _) = anonymize_corpus(
        [call("c1"), call("c2")], detector, policy=surrogate_policy
    )
    assert set(str(one.turns[1].speaker).split()).isdisjoint(str(two.turns[1].speaker).split())


def test_embedding_picks_among_the_nearest_candidates_in_context() -> None:
    from components.anonymize.surrogates.embedding import EmbeddingSource

    source = EmbeddingSource(RealisticValues("en_US"), k=3, radius=2.0)
    context = ("I moved to ", " last year and I love the weather there.")
    candidates = ["Springfield", "a banana", "the quarterly revenue report"]
    picks = {
        source.choose("Denver", candidates, rng=random.Random(i), context=context)
        for i in range(20)
    }
    assert picks == set(candidates)  # radius 2 admits all of the k = 3
    near = EmbeddingSource(RealisticValues("en_US"), k=1, radius=2.0)
    assert near.choose("Denver", candidates, rng=random.Random(0), context=context) == "Springfield"
    tight = EmbeddingSource(RealisticValues("en_US"), k=3, radius=1e-6)
    # none within the radius: the nearest
    assert (
        tight.choose("Denver", candidates, rng=random.Random(0), context=context) == "Springfield"
    )


def test_embedding_surrogates_in_a_conversation(detector) -> None:  # type: ignore[no-untyped-def]
    config = AnonymizeConfig(replacement="surrogate", surrogate=SurrogateConfig(method="embedding"))
    policy = AnonymizationPolicy(
        mode="surrogate",
        speaker_roles=DEFAULT_SPEAKER_ROLES,
        surrogates=build_surrogates(config, __import__("pathlib").Path(), key=SurrogateKey(SALT)),
    )
    ((anonymized, replacements),) = list(anonymize_corpus([call("c1")], detector, policy=policy))
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
    name, how = source.first_name(random.Random(0), None, original="Mark", context=context)
    assert how == "lm" and name.isalpha() and name.lower() != "mark"
    (spans,) = detector.detect([context[0] + name + context[1]])
    assert any(s.entity_type == "PERSON_NAME" for s in spans)
    refusing = LmSource(
        values,
        base_model_dir,
        k=10,
        top1=False,
        check=lambda texts, places, info_type: [False] * len(texts),
    )
    refusing._proposer = source.proposer  # the loaded model, shared
    name, how = refusing.first_name(random.Random(0), None, original="Mark", context=context)
    assert how == "realistic" and name in values.names.first_set


_COMPANY = r"[A-Z][\w ,&'-]*\w"
_ADDRESS_NUMBER = r"[1-9]\d"


# Surrogates, like placeholders, keep the text around them exactly: the period after a
# company, the city after a street, the question after an address.
@pytest.mark.parametrize(
    ("text", "shape"),
    [
        (
            "Hi, I'm calling from Acme Insurance. My policy number changed.",
            rf"Hi, I'm calling from {_COMPANY}\. My policy number changed\.",
        ),
        (
            "I moved from 12 Oak Street, Boston. Can you update it?",
            rf"I moved from {_ADDRESS_NUMBER} {_NAME} Street, {_PLACE}\. Can you update it\?",
        ),
        (
            "It's at 45 Elm St. Is that right?",
            rf"It's at {_ADDRESS_NUMBER} {_NAME} St\. Is that right\?",
        ),
        ("Thanks, that's billed to Gonzalez LLC.", rf"Thanks, that's billed to {_COMPANY}\."),
        (
            "Send it to 12 Oak Street, St. Louis, MO 63101. Thanks",
            rf"Send it to {_ADDRESS_NUMBER} {_NAME} Street, {_PLACE}, [A-Z]{{2}} \d{{5}}\. Thanks",
        ),
    ],
)
def test_surrogates_keep_the_text_around_them(  # type: ignore[no-untyped-def]
    detector, surrogate_policy, *, text: str, shape: str
) -> None:
    conversations = [Conversation(f"c{i}", (Turn(None, text),), plain=True) for i in range(5)]
    placeholders = AnonymizationPolicy(speaker_roles=DEFAULT_SPEAKER_ROLES)
    ((masked, _),) = anonymize_corpus(conversations[:1], detector, policy=placeholders)
    for anonymized, replacements in anonymize_corpus(
        conversations, detector, policy=surrogate_policy
    ):
        assert re.fullmatch(shape, anonymized.turns[0].text), anonymized.turns[0].text
        # read back with placeholders, it is the placeholder text, punctuation included
        view = placeholder_view(anonymized, [r.to_record() for r in replacements])
        assert view.turns[0].text == masked.turns[0].text
