"""DialogSum (Chen et al., Findings of ACL 2021) as veiltune conversations.

Each record ``{"fname", "dialogue", "summary", "topic"}`` becomes the conversation
``dialogsum-<fname>`` in context ``dialogue``: one turn per ``#PersonN#: text`` line, spoken
by ``PersonN``, and the human-written summary as its ``summary`` label, with the summary's
``#PersonN#`` tags written ``PersonN`` like the speakers. DialogSum carries no ground-truth PI
spans: its names are in the text and the summaries, found by the anonymizer and scored by
the automatic residual-risk estimate. A 200-record sample (CC BY-NC-SA 4.0) ships in
``samples/dialogsum/`` with its licence; the full sets stay outside the repository.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from components.core.corpus import Conversation, Turn
from components.core.errors import InputError
from components.core.jsonio import iter_jsonl
from components.ingest.config import DialogSumConfig
from components.ingest.generate.sensitive import SENSITIVE, is_generated_sensitive

DATASET = "dialogsum"
MAIN = "main"  # the user's or the embedded corpus
CONTEXT = "dialogue"
ID_PREFIX = "dialogsum-"
_TURN = re.compile(r"#(Person\d+)#:[ \t]*")
_TAG = re.compile(r"#(Person\d+)#")


def untag(text: str) -> str:
    """``#Person1#`` written as the speaker name ``Person1``."""
    return _TAG.sub(r"\1", text)


def dialogsum_conversation(obj: Mapping[str, Any], where: str) -> Conversation:
    """One DialogSum record as a conversation; ``where`` (``file:line``) names bad records.

    Raises:
        InputError: ``fname``, ``dialogue`` or ``summary`` missing or empty, or a dialogue
            line without its ``#PersonN#:`` speaker tag.
    """
    fname = obj.get("fname")
    if not isinstance(fname, str | int) or isinstance(fname, bool) or str(fname) == "":
        raise InputError(f"{where}: missing or empty key 'fname'")
    dialogue = _required_text(obj, "dialogue", where=where)
    summary = _required_text(obj, "summary", where=where)
    return Conversation(
        f"{ID_PREFIX}{fname}",
        _turns(dialogue, where),
        CONTEXT,
        labels={"summary": untag(summary).strip()},
    )


def _required_text(obj: Mapping[str, Any], key: str, *, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where}: missing or empty key '{key}' (a string)")
    return value


def _turns(dialogue: str, where: str) -> tuple[Turn, ...]:
    turns = []
    for number, line in enumerate(dialogue.splitlines(), start=1):
        if not line.strip():
            continue
        match = _TURN.match(line.strip())
        if match is None:
            raise InputError(
                f"{where}: 'dialogue' line {number} does not start with a '#PersonN#:' speaker tag"
            )
        turns.append(Turn(match.group(1), untag(line.strip()[match.end() :])))
    return tuple(turns)  # not empty: the dialogue has a non-blank line


def read_dialogsum(path: Path, max_dialogues: int) -> list[Conversation]:
    """The first ``max_dialogues`` records of a DialogSum JSONL file, validated.

    Raises:
        InputError: naming file and line for a bad record or a repeated ``fname``, or the
            file for one without records.
    """
    conversations: list[Conversation] = []
    first_line: dict[str, int] = {}
    for line_no, obj in iter_jsonl(path):
        if len(conversations) == max_dialogues:
            break
        conversation = dialogsum_conversation(obj, f"{path}:{line_no}")
        if conversation.id in first_line:
            raise InputError(
                f"{path}:{line_no}: fname {obj['fname']!s} repeats line "
                f"{first_line[conversation.id]}"
            )
        first_line[conversation.id] = line_no
        conversations.append(conversation)
    if not conversations:
        raise InputError(f"{path}: no DialogSum records")
    return conversations


def load_dialogsum(config: DialogSumConfig, base_dir: Path) -> list[Conversation]:
    """DialogSum's conversations as params select them; none when ``path`` is null.

    Raises:
        InputError: the file is missing (the message says how to turn DialogSum off), or a
            record is bad.
    """
    if config.path is None:
        return []
    path = Path(config.path)
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        raise InputError(
            f"ingest.dialogsum.path: {path}: no such file; point it at dialogsum.dev.jsonl "
            "or set 'ingest.dialogsum.path: null' in params.yaml to ingest without DialogSum"
        )
    return read_dialogsum(path, config.max_dialogues)


def check_main_ids(corpus: Sequence[Conversation], corpus_name: str) -> None:
    """Refuse a main-corpus id that uses the ``dialogsum-`` prefix marking DialogSum's
    conversations (evaluation tells the datasets apart by it).

    Raises:
        InputError: naming the id and the corpus.
    """
    for conversation in corpus:
        if conversation.id.startswith(ID_PREFIX):
            raise InputError(
                f"{corpus_name}: id {conversation.id!r} starts with {ID_PREFIX!r}, which "
                "veiltune reserves for DialogSum conversations; rename it"
            )


def dataset_of(conversation: Conversation) -> str:
    """``dialogsum`` for a conversation ingested from DialogSum, ``sensitive`` for a
    generated call of the sensitivity corpus, else ``main``."""
    if conversation.id.startswith(ID_PREFIX) and conversation.context == CONTEXT:
        return DATASET
    return SENSITIVE if is_generated_sensitive(conversation) else MAIN


def split_by_dataset(
    conversations: Sequence[Conversation], limit: int | None = None
) -> dict[str, list[Conversation]]:
    """``{"main": [...], "dialogsum": [...], "sensitive": [...]}`` in input order, each cut
    to its first ``limit`` conversations (every key always present)."""
    groups: dict[str, list[Conversation]] = {MAIN: [], DATASET: [], SENSITIVE: []}
    for conversation in conversations:
        groups[dataset_of(conversation)].append(conversation)
    return {name: group[:limit] for name, group in groups.items()}
