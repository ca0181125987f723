"""The one-run audit's canaries: random secrets and fair coins, drawn from the salt alone."""

from __future__ import annotations

from components.ingest import AuditCanary, draw_audit_canaries, inserted_canaries


def test_canaries_are_drawn_from_the_salt_alone() -> None:
    first = draw_audit_canaries(50, "a" * 32)
    assert first == draw_audit_canaries(50, "a" * 32)  # a team's workers agree
    other = draw_audit_canaries(50, "b" * 32)
    assert {c.secret for c in first}.isdisjoint(c.secret for c in other)
    assert len({c.secret for c in first}) == 50


def test_about_half_are_inserted() -> None:
    canaries = draw_audit_canaries(1000, "a" * 32)
    inserted = list(inserted_canaries(canaries))
    assert 430 <= len(inserted) <= 570  # Binomial(1000, 1/2): 4.4 sd either side
    assert all(c.inserted for c in inserted)


def test_a_canary_round_trips_through_its_record() -> None:
    (canary,) = draw_audit_canaries(1, "a" * 32)
    assert AuditCanary.from_record(canary.to_record()) == canary
    assert draw_audit_canaries(0, "a" * 32) == []
