"""The attacks' arithmetic on small hand-made cases."""

from __future__ import annotations

import random

import pytest

from audits.canary import candidate_secrets, estimated_exposure, exposure, rank_of
from audits.extraction import answer_offsets, extraction_prefix, reproduces
from audits.membership import auc_p_value, roc_auc, tpr_at_fpr, unseen_pi
from audits.result import AuditResult, audit_summary
from components.anonymize import StandIns
from components.core.corpus import Conversation, PiSpan, Turn
from components.ingest.canaries import Canary
from components.train import split_for_continuation


def test_exposure_from_rank() -> None:
    assert exposure(1, 1024) == pytest.approx(10.0)
    assert exposure(1024, 1024) == pytest.approx(0.0)
    assert exposure(32, 1024) == pytest.approx(5.0)
    with pytest.raises(ValueError):
        exposure(0, 10)


def test_rank_counts_ties_against_the_canary() -> None:
    assert rank_of(-1.0, [-5.0, -3.0, -2.0]) == 1
    assert rank_of(-3.0, [-5.0, -3.0, -2.0]) == 3
    assert rank_of(-9.0, [-5.0, -3.0]) == 3


def test_estimated_exposure_extrapolates_beyond_the_sample() -> None:
    rng = random.Random(0)
    candidates = [rng.gauss(-20.0, 2.0) for _ in range(200)]
    typical = estimated_exposure(-20.0, candidates)
    assert 0.5 < typical < 1.5  # the median candidate: P(>=) = 1/2, one bit
    memorized = estimated_exposure(-2.0, candidates)  # nine standard deviations up
    assert memorized > 40  # far beyond log2(201) = 7.65, which a rank could show
    assert estimated_exposure(-60.0, candidates) < 0.01


def test_candidates_share_the_format_and_never_include_the_canary() -> None:
    canary = Canary("c", "PHONE_NUMBER", "415-872-3391", 4, ("a",))
    candidates = candidate_secrets(canary, 50, seed=1)
    assert len(set(candidates)) == 50 and canary.secret not in candidates
    assert all(len(c) == 12 and c[3] == "-" and c[7] == "-" for c in candidates)
    assert candidates == candidate_secrets(canary, 50, seed=1)


def test_auc_and_tpr_at_low_fpr() -> None:
    assert roc_auc([3, 4, 5], [0, 1, 2]) == 1.0
    assert roc_auc([0, 1, 2], [3, 4, 5]) == 0.0
    assert roc_auc([1, 1], [1, 1]) == 0.5
    assert roc_auc([2, 0], [1, 1]) == 0.5
    # Two members above every non-member: flagged with no false positive.
    assert tpr_at_fpr([9, 8, 1, 0], [5, 4, 3, 2], max_fpr=0.01) == 0.5
    assert tpr_at_fpr([1, 2], [5, 6], max_fpr=0.01) == 0.0
    with pytest.raises(ValueError):
        roc_auc([], [1])


def test_auc_p_value_is_the_chance_of_ranking_members_that_high() -> None:
    assert auc_p_value(1.0, 5, n_nonmembers=5) == pytest.approx(1 / 252)  # one ordering of C(10, 5)
    assert auc_p_value(0.0, 5, n_nonmembers=5) == 1.0
    assert auc_p_value(0.5, 5, n_nonmembers=5) == pytest.approx(
        0.5
    )  # U's distribution is symmetric
    # 0.76 at five a side is no evidence: chance alone does it one time in nine
    assert auc_p_value(0.76, 5, n_nonmembers=5) == pytest.approx(1 / 9)
    # the normal approximation takes over where the exact count stops, and agrees with it
    exact, approximate = (
        auc_p_value(0.7, 32, n_nonmembers=32),
        auc_p_value(0.7, 33, n_nonmembers=32),
    )
    assert exact == pytest.approx(approximate, rel=0.05)
    assert auc_p_value(0.6, 24, n_nonmembers=24) > auc_p_value(0.75, 24, n_nonmembers=24)


def test_stand_ins_take_each_unseen_value_s_place_in_its_shape() -> None:
    turns = (
        Turn("Agent", "Thanks for calling."),
        Turn("Caller", "Hi."),
        Turn("Agent", "Is this Dana Reyes?"),
        Turn("Caller", "Yes, Dana Reyes, call me on 555-0134."),
    )
    pi = (
        PiSpan(2, 8, 18, "PERSON_NAME", "p1"),
        PiSpan(3, 5, 15, "PERSON_NAME", "p1"),
        PiSpan(3, 28, 36, "PHONE_NUMBER", "t1"),
    )
    conv = Conversation("d", turns, pi=pi)
    _, answer = split_for_continuation(conv)
    spans = unseen_pi(conv)
    assert [answer[s.start : s.end] for s in spans] == ["Dana Reyes", "Dana Reyes", "555-0134"]
    other, placed = StandIns("salt", "en_US").replace(conv.id, answer, spans=spans)
    first, second, phone = (other[s:e] for s, e in placed)
    assert first == second != "Dana Reyes"  # one stand-in per person
    assert first.istitle() and len(first.split()) == 2
    assert phone != "555-0134" and phone[3] == "-" and phone.replace("-", "").isdigit()
    assert other.replace(first, "N").replace(phone, "T") == answer.replace(
        "Dana Reyes", "N"
    ).replace("555-0134", "T")
    # the audit's own seed: the same under one salt, not under another
    assert StandIns("salt", "en_US").replace(conv.id, answer, spans=spans)[0] == other
    assert StandIns("pepper", "en_US").replace(conv.id, answer, spans=spans)[0] != other


def test_values_the_prompt_has_shown_get_no_stand_in() -> None:
    conv = conversation()
    _, answer = split_for_continuation(conv)
    assert [answer[s.start : s.end] for s in unseen_pi(conv)] == ["ann.lee@example.com"]


def conversation() -> Conversation:
    turns = (
        Turn("Ann Lee", "Hi, this is Ann Lee."),
        Turn("Bob Ray", "Hello."),
        Turn("Ann Lee", "Mail me at ann.lee@example.com please."),
        Turn("Bob Ray", "Will do, Ann Lee."),
    )
    pi = (
        PiSpan(0, 0, 7, "PERSON_NAME", "p1", "speaker"),
        PiSpan(0, 12, 19, "PERSON_NAME", "p1"),
        PiSpan(1, 0, 7, "PERSON_NAME", "p2", "speaker"),
        PiSpan(2, 0, 7, "PERSON_NAME", "p1", "speaker"),
        PiSpan(2, 11, 30, "EMAIL_ADDRESS", "e1"),
        PiSpan(3, 0, 7, "PERSON_NAME", "p2", "speaker"),
        PiSpan(3, 9, 16, "PERSON_NAME", "p1"),
    )
    return Conversation("c", turns, pi=pi)


def test_answer_offsets_locate_values_in_the_continuation_answer() -> None:
    conv = conversation()
    answer = "Ann Lee: Mail me at ann.lee@example.com please.\nBob Ray: Will do, Ann Lee."
    spans = answer_offsets(conv, 2)
    assert [answer[s:e] for s, e, _ in spans] == [
        "Ann Lee",
        "ann.lee@example.com",
        "Bob Ray",
        "Ann Lee",
    ]


def test_extraction_prefix_stops_before_the_first_value_the_context_has_not_shown() -> None:
    prefix = extraction_prefix(conversation())
    assert prefix is not None
    # The names were in the prompt (copyable), the email was not.
    assert prefix.answer_start == "Ann Lee: Mail me at"
    assert prefix.answer_rest.startswith(" ann.lee@example.com")
    turns = (Turn("Ann Lee", "Hi Bob Ray."), Turn("Bob Ray", "Hello Ann Lee."))
    pi = (
        PiSpan(0, 0, 7, "PERSON_NAME", "p1", "speaker"),
        PiSpan(0, 3, 10, "PERSON_NAME", "p2"),
        PiSpan(1, 0, 7, "PERSON_NAME", "p2", "speaker"),
        PiSpan(1, 6, 13, "PERSON_NAME", "p1"),
    )
    shown = Conversation("d", turns, pi=pi)
    assert extraction_prefix(shown) is None  # only copyable values: no memory test
    unseen_turns = (turns[0], Turn("Cy Dow", "Hello."))
    unseen_pi = (*pi[:2], PiSpan(1, 0, 6, "PERSON_NAME", "p3", "speaker"))
    prefix = extraction_prefix(Conversation("e", unseen_turns, pi=unseen_pi))
    assert prefix is not None and prefix.answer_start == ""  # the next speaker's name


def test_reproduces_ignores_whitespace_only() -> None:
    assert reproduces(" ann.lee@example.com  please", "ann.lee@example.com please")
    assert not reproduces("ann.lee@example.org please", "ann.lee@example.com")
    assert not reproduces("anything", "")


def test_audit_passes_only_if_every_audit_passed() -> None:
    ok, bad = AuditResult("a", True, {"x": 1}, {"max": 2}), AuditResult("b", False)
    assert audit_summary([ok], "anonymized")["passed"] is True
    summary = audit_summary([ok, bad], "raw")
    assert summary["passed"] is False and summary["train_corpus"] == "raw"
    assert summary["audits"]["a"] == {"passed": True, "figures": {"x": 1}, "thresholds": {"max": 2}}
