from __future__ import annotations

from components.corpus import Conversation, PiSpan, Turn
from components.pi_inventory import find_leaks, inventory_entries, normalized

SALT = "test-salt"


def conversation() -> Conversation:
    text = "I'm Mark Kowalski, mail mark.k@example.com or call 555 010 4477"
    return Conversation(
        "c1",
        (Turn("Pam", text),),
        pi=(
            PiSpan(0, 4, 17, "PERSON_NAME", "p1"),
            PiSpan(0, 24, 42, "EMAIL_ADDRESS", "e1"),
            PiSpan(0, 51, 63, "PHONE_NUMBER", "t1"),
            PiSpan(0, 0, 3, "PERSON_NAME", "p2", "speaker"),
        ),
    )


def test_inventory_holds_hashes_not_values() -> None:
    entries = list(inventory_entries([conversation()], SALT))
    assert len(entries) == 4
    serialized = repr([e.to_record() for e in entries]).lower()
    for value in ("kowalski", "example", "4477", "pam"):
        assert value not in serialized


def test_leaks_found_by_hash_regardless_of_case_and_punctuation() -> None:
    entries = list(inventory_entries([conversation()], SALT))
    output = "Sure, MARK KOWALSKI can be reached at mark.k@example.com."
    found = find_leaks(output, entries, SALT, min_chars=6)
    assert sorted(e.entity_type for e in found) == ["EMAIL_ADDRESS", "PERSON_NAME"]
    assert find_leaks("The customer asked about a refund.", entries, SALT, 6) == []


def test_short_values_are_ignored_below_min_chars() -> None:
    entries = list(inventory_entries([conversation()], SALT))
    assert find_leaks("Pam called.", entries, SALT, min_chars=6) == []
    assert [e.entity_type for e in find_leaks("Pam called.", entries, SALT, 3)] == ["PERSON_NAME"]


def test_a_different_salt_does_not_match() -> None:
    entries = list(inventory_entries([conversation()], SALT))
    assert find_leaks("mark kowalski", entries, "other", 6) == []
    assert normalized("Mark  KOWALSKI!") == "mark kowalski"
