"""A token classifier's labels read as BIO, and the policy that maps them to info types."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from components.core.config import read_policy_yaml
from components.core.errors import InputError

OUTSIDE = "O"
BEGIN, INSIDE = "B-", "I-"
LABELS_KEY = "anonymize.ner.labels"


@dataclass(frozen=True)
class LabelScheme:
    """A model's labels in its output order: ``O`` is outside any entity, ``B-X`` begins an
    entity ``X``, ``I-X`` (or a bare ``X``) continues one."""

    labels: tuple[str, ...]

    @cached_property
    def entities(self) -> tuple[str, ...]:
        """The entity names, each once, in order of first appearance."""
        names = (self.entity_of(i) for i in range(len(self.labels)))
        return tuple(dict.fromkeys(name for name in names if name is not None))

    def entity_of(self, index: int) -> str | None:
        """The entity of label ``index``, None for outside."""
        label = self.labels[index]
        if label == OUTSIDE:
            return None
        return label[2:] if label.startswith((BEGIN, INSIDE)) else label

    def begins(self, index: int) -> bool:
        return self.labels[index].startswith(BEGIN)

    @cached_property
    def entity_matrix(self) -> np.ndarray:
        """labels x entities, 1 where a label belongs to an entity: a token's label
        probabilities times it are its probability of each entity, B- and I- together."""
        matrix = np.zeros((len(self.labels), len(self.entities)), dtype=np.float32)
        column = {name: j for j, name in enumerate(self.entities)}
        for i in range(len(self.labels)):
            entity = self.entity_of(i)
            if entity is not None:
                matrix[i, column[entity]] = 1.0
        return matrix


def scheme_from_id2label(
    id2label: Mapping[str, str] | Mapping[int, str], where: str
) -> LabelScheme:
    """The scheme of a Hugging Face ``config.json``'s ``id2label`` (keys 0..n-1).

    Raises:
        InputError: the ids are not 0..n-1, naming ``where``.
    """
    try:
        by_id = {int(key): str(label) for key, label in id2label.items()}
    except (TypeError, ValueError) as exc:
        raise InputError(f"{where}: id2label: ids must be integers") from exc
    if sorted(by_id) != list(range(len(by_id))) or not by_id:
        raise InputError(f"{where}: id2label: ids must be 0..n-1")
    return LabelScheme(tuple(by_id[i] for i in range(len(by_id))))


def read_label_policy(path: Path, known_info_types: Collection[str]) -> dict[str, str | None]:
    """The label -> info type mapping (None: no PI) of the policy file at ``path``.

    Raises:
        InputError: the file is missing or malformed, or maps to an unknown info type.
    """
    document = read_policy_yaml(
        path,
        f"{LABELS_KEY}: {path}: no such label-mapping file",
        malformed=f"{LABELS_KEY}: {path}: not a YAML label mapping",
    )
    labels = document.get("labels") if isinstance(document, dict) else None
    if not isinstance(labels, dict):
        raise InputError(f"{LABELS_KEY}: {path}: labels: a mapping of label -> info type")
    policy: dict[str, str | None] = {}
    for label, info_type in labels.items():
        if info_type is not None and str(info_type) not in known_info_types:
            raise InputError(
                f"{LABELS_KEY}: {path}: labels.{label}: {info_type!r} is not an info type "
                "veiltune knows (null: a label that is no PI)"
            )
        policy[str(label)] = None if info_type is None else str(info_type)
    return policy


def info_types_of(
    entities: Sequence[str], policy: Mapping[str, str | None], *, path: Path
) -> dict[str, str | None]:
    """Each of a model's ``entities`` mapped by ``policy``.

    Raises:
        InputError: some entities are not in the policy, every one of them named.
    """
    unmapped = [name for name in entities if name not in policy]
    if unmapped:
        raise InputError(
            f"{LABELS_KEY}: {path} maps no info type for the model's labels "
            f"{', '.join(unmapped)}: add them under labels (null for a label that is no PI)"
        )
    return {name: policy[name] for name in entities}
