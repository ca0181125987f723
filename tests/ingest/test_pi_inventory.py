from __future__ import annotations

from components.core.corpus import Conversation, PiSpan, Turn
from components.ingest.pi_inventory import find_leaks, inventory_entries, normalized

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
    found = find_leaks(output, entries, salt=SALT, min_chars=6)
    assert sorted(e.entity_type for e in found) == ["EMAIL_ADDRESS", "PERSON_NAME"]
    assert find_leaks("The customer asked about a refund.", entries, salt=SALT, min_chars=6) == []


def test_values_shorter_than_min_chars_are_ignored() -> None:
    entries = list(inventory_entries([conversation()], SALT))
    output = "write to mark.k@example.com"  # 15 letters and digits
    assert [e.entity_type for e in find_leaks(output, entries, salt=SALT, min_chars=15)] == [
        "EMAIL_ADDRESS"
    ]
    assert find_leaks(output, entries, salt=SALT, min_chars=16) == []


def test_a_different_salt_does_not_match() -> None:
    entries = list(inventory_entries([conversation()], SALT))
    assert find_leaks("mark kowalski", entries, salt="other", min_chars=6) == []
    assert normalized("Mark  KOWALSKI!") == "mark kowalski"


def test_a_lone_common_first_name_is_not_counted_as_a_leak() -> None:
    text = "This is Shelby. Shelby Kowalski, yes."
    conversation = Conversation(
        "c2",
        (Turn(None, text),),
        pi=(PiSpan(0, 8, 14, "PERSON_NAME", "p1"), PiSpan(0, 16, 31, "PERSON_NAME", "p1")),
    )
    entries = list(inventory_entries([conversation], SALT))
    assert sorted(e.specific for e in entries) == [False, True]
    assert find_leaks("Sure, Shelby.", entries, salt=SALT, min_chars=6) == []
    assert [e.n_tokens for e in find_leaks("shelby kowalski", entries, salt=SALT, min_chars=6)] == [
        2
    ]


def test_digests_are_hmac_keyed_with_the_salt() -> None:
    import hashlib
    import hmac

    from components.ingest.pi_inventory import salted_digest
    from components.risk.estimate import item_digest, variant_key

    expected = hmac.new(SALT.encode(), b"555 010 4477", hashlib.sha256).hexdigest()
    assert salted_digest("555 010 4477", SALT) == expected
    # not the plain salted hash of old, which is open to length extension and mixes key and data
    assert (
        salted_digest("555 010 4477", SALT)
        != hashlib.sha256(f"{SALT}\x00555 010 4477".encode()).hexdigest()
    )
    key = variant_key("Kowalski")
    assert (
        item_digest("Kowalski", SALT)
        == hmac.new(SALT.encode(), key.encode(), hashlib.sha256).hexdigest()[:16]
    )
    assert salted_digest("555 010 4477", "another-salt") != expected
