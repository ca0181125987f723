from __future__ import annotations

from audits.pii_output import audit_outputs
from components.corpus import Conversation, PiSpan, Turn
from components.pi_inventory import inventory_entries

SALT = "s"


def inventory():  # type: ignore[no-untyped-def]
    text = "This is Mark Kowalski, mark.k@example.com, 555 010 4477"
    conversation = Conversation(
        "c1",
        (Turn(None, text),),
        pi=(
            PiSpan(0, 8, 21, "PERSON_NAME", "p1"),
            PiSpan(0, 23, 41, "EMAIL_ADDRESS", "e1"),
            PiSpan(0, 43, 55, "PHONE_NUMBER", "t1"),
        ),
    )
    return list(inventory_entries([conversation], SALT))


def test_clean_outputs_pass() -> None:
    outputs = ["The customer asked [PERSON_NAME_1] to call back.", "Summary: refund issued."]
    result = audit_outputs(outputs, inventory(), SALT, min_value_chars=6, max_leaks=0)
    assert result.passed and result.n_leaks == 0
    assert result.to_metrics()["pii_leaks_by_type"] == {}


def test_leaked_values_fail_and_are_counted_by_type_once_per_output() -> None:
    outputs = [
        "Call mark kowalski, Mark Kowalski!",
        "Write to MARK.K@EXAMPLE.COM or 555-010-4477",
        "nothing here",
    ]
    result = audit_outputs(outputs, inventory(), SALT, min_value_chars=6, max_leaks=0)
    assert not result.passed
    assert result.leaks_by_type == {"PERSON_NAME": 1, "EMAIL_ADDRESS": 1, "PHONE_NUMBER": 1}
    assert result.n_outputs_with_leaks == 2
    tolerant = audit_outputs(outputs, inventory(), SALT, min_value_chars=6, max_leaks=3)
    assert tolerant.passed
