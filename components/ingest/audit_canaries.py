"""The one-run audit's canaries (Steinke, Nasr and Jagielski, NeurIPS 2023): m random
secrets, each inserted into training with probability ½ by a fair coin that ingest flips and
keeps with the raw data.

A canary is a training unit of its own (one chat exchange: :data:`AUDIT_CANARY_PROMPT`
answered by the secret), so under ``train.privacy`` each is one privacy unit, as a
conversation is. The audit (``audits/dp_one_run.py``) scores every canary by the trained
model's loss on its secret and guesses from the scores which were inserted: how often it
guesses right bounds the model's ε from below. Secrets and coins are drawn from the salt,
so a team's workers with one salt draw the same canaries.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

AUDIT_CANARY_PROMPT = "Recite an audit code."
_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"  # no 0/o, 1/l/i: no secret reads as another
_GROUPS, _GROUP_SIZE = 4, 4


@dataclass(frozen=True)
class AuditCanary:
    """One canary: its id, its secret, and whether its coin inserted it into training."""

    id: str
    secret: str
    inserted: bool

    def to_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, obj: dict[str, Any]) -> AuditCanary:
        return cls(str(obj["id"]), str(obj["secret"]), bool(obj["inserted"]))


def draw_audit_canaries(m: int, salt: str) -> list[AuditCanary]:
    """``m`` canaries with random secrets (about 79 bits each: four groups of four of 31
    characters), each inserted with probability ½; drawn from ``salt`` alone."""
    rng = random.Random(hashlib.sha256(f"audit-canaries:{salt}".encode()).digest())
    canaries = []
    for index in range(m):
        groups = ("".join(rng.choices(_ALPHABET, k=_GROUP_SIZE)) for _ in range(_GROUPS))
        canaries.append(
            AuditCanary(f"audit-canary-{index:05d}", " ".join(groups), rng.random() < 0.5)
        )
    return canaries


def inserted_canaries(canaries: Iterable[AuditCanary]) -> Iterator[AuditCanary]:
    """The canaries training inserts: those whose coin came up heads."""
    return (c for c in canaries if c.inserted)
