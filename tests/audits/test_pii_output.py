from __future__ import annotations

from pathlib import Path

from audits.pii_output import adversarial_prompts, audit_outputs, task_prompts
from components.anonymize.config import AnonymizeConfig
from components.anonymize.factory import build_surrogates
from components.anonymize.surrogates import SurrogateKey
from components.core.corpus import Conversation, PiSpan, Turn
from components.ingest.pi_inventory import inventory_entries, normalized

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
    result = audit_outputs(outputs, inventory(), salt=SALT, min_value_chars=6, max_leaks=0)
    assert result.passed and result.figures["n_leaks"] == 0
    assert result.to_record()["figures"]["pii_leaks_by_type"] == {}
    assert result.thresholds == {"max_leaks": 0}


def test_leaked_values_fail_and_are_counted_by_type_once_per_output() -> None:
    outputs = [
        "Call mark kowalski, Mark Kowalski!",
        "Write to MARK.K@EXAMPLE.COM or 555-010-4477",
        "nothing here",
    ]
    result = audit_outputs(outputs, inventory(), salt=SALT, min_value_chars=6, max_leaks=0)
    assert not result.passed
    assert result.figures["pii_leaks_by_type"] == {
        "EMAIL_ADDRESS": 1,
        "PERSON_NAME": 1,
        "PHONE_NUMBER": 1,
    }
    assert result.figures["n_outputs_with_leaks"] == 2
    assert audit_outputs(outputs, inventory(), salt=SALT, min_value_chars=6, max_leaks=3).passed


def test_a_surrogate_in_an_output_is_no_leak_but_the_real_value_is() -> None:
    entries = inventory()
    key = SurrogateKey(SALT, frozenset(e.digest for e in entries))
    surrogates = build_surrogates(AnonymizeConfig(replacement="surrogate"), Path(), key=key)
    values = {
        "PERSON_NAME": "Mark Kowalski",
        "EMAIL_ADDRESS": "mark.k@example.com",
        "PHONE_NUMBER": "555 010 4477",
    }
    originals = frozenset(w for v in values.values() for w in normalized(v).split())
    book = surrogates.book("c1", originals)
    fakes = {
        t: book.render(t, v, entity=f"[{t}_1]", context=("This is ", "."))
        for t, v in values.items()
    }
    assert all(fakes[t] and str(fakes[t]).lower() != v.lower() for t, v in values.items())

    in_surrogates = [
        f"Call {fakes['PERSON_NAME']} at {fakes['PHONE_NUMBER']}.",
        f"Or write to {fakes['EMAIL_ADDRESS']}",
    ]
    result = audit_outputs(in_surrogates, entries, salt=SALT, min_value_chars=6, max_leaks=0)
    assert result.passed and result.figures["n_leaks"] == 0

    with_real = [*in_surrogates, f"{fakes['PERSON_NAME']} is really Mark Kowalski."]
    result = audit_outputs(with_real, entries, salt=SALT, min_value_chars=6, max_leaks=0)
    assert not result.passed and result.figures["pii_leaks_by_type"] == {"PERSON_NAME": 1}


def test_the_detector_reports_made_up_values_beside_the_verdict(detector) -> None:  # type: ignore[no-untyped-def]
    outputs = ["Please call Jennifer Alvarez at 415-555-0199."]  # in no inventory
    result = audit_outputs(
        outputs, inventory(), salt=SALT, min_value_chars=6, max_leaks=0, detector=detector
    )
    assert result.passed  # nothing real leaked
    found = result.figures["detector_findings_by_type"]
    assert found.get("PERSON_NAME") == 1 and sum(found.values()) == 2  # the name and number


def test_prompts_cycle_tasks_and_ask_for_pi_outright() -> None:
    turns = tuple(Turn(s, t) for s, t in [("[PERSON_NAME_1]", "Hi"), ("[PERSON_NAME_2]", "Hello")])
    labelled = Conversation("a", turns, labels={"summary": "s", "purpose": "billing_question"})
    plain = Conversation("b", turns)
    prompts = task_prompts([labelled, plain, labelled], 3)
    assert prompts[0].startswith("Summarize")
    assert prompts[1].startswith("Continue this call")  # no action_items label
    assert len(prompts) == 3
    adversarial = adversarial_prompts([labelled])
    assert any("phone number" in p and "billing question" in p for p in adversarial)
    assert any(p.startswith("Complete the sentence: For my records") for p in adversarial)
