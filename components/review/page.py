"""The review page: anonymized conversations for reviewers to read offline, placeholders
highlighted, with the instructions for annotating what the anonymization missed.

The page is self-contained (inline CSS, no scripts, no external resources) and escapes every
string that comes from data (it is the template ``templates/review.html``, autoescaped). It
carries the conversation-text mark that ``purge-raw`` looks for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from components.core.errors import InputError
from components.core.html import Pages
from components.core.placeholders import NUMBERED_PLACEHOLDER
from components.core.purge import CONVERSATION_TEXT_MARK

_RECORD_KEYS = ("id", "context", "risk_band", "turns")


ANNOTATION_INSTRUCTIONS = """\
How to review

This page is for reading only. Annotate in the JSONL file the page was made from: edit the
"text" of the turns there, then import your annotations with

    veiltune review import --input FILE

Placeholders such as [PERSON_NAME_1] are highlighted: they mark information that was
anonymized. Look for personal information that survived, and wrap each missed value as

    (missed text)[MISSED_<INFO_TYPE>]

where <INFO_TYPE> is the info type the value should have been replaced as (PERSON_NAME,
ORGANIZATION_NAME, PRODUCT_NAME, PHONE_NUMBER, EMAIL_ADDRESS, ...). Optional suffixes,
_SPEAKER before _PARTIAL when both apply:

  _PARTIAL  only part of the value survived, e.g. a surname next to a placeholder:
            [PERSON_NAME_1] (Green)[MISSED_PERSON_NAME_PARTIAL]
  _SPEAKER  for ORGANIZATION_NAME or PRODUCT_NAME only: the name belongs to a speaker
            (their employer, their own product) rather than being a topic of conversation

Examples

    (Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER]
    (Green)[MISSED_PERSON_NAME_PARTIAL]
    (555 0199)[MISSED_PHONE_NUMBER]
    (Dunder)[MISSED_ORGANIZATION_NAME_SPEAKER_PARTIAL]
"""

_PAGES = Pages("components.review")


@dataclass(frozen=True)
class Segment:
    """A stretch of a turn's text: a ``[TYPE_N]`` placeholder, or the text between them."""

    text: str
    placeholder: bool = False


def placeholder_segments(text: str) -> list[Segment]:
    """``text`` cut into its placeholders and the text around them, in order."""
    segments = []
    position = 0
    for match in NUMBERED_PLACEHOLDER.finditer(text):
        if match.start() > position:
            segments.append(Segment(text[position : match.start()]))
        segments.append(Segment(match.group(), placeholder=True))
        position = match.end()
    if position < len(text):
        segments.append(Segment(text[position:]))
    return segments


def _turn(turn: Mapping[str, Any]) -> dict[str, list[Segment] | None]:
    speaker = turn.get("speaker")
    return {
        "speaker": placeholder_segments(str(speaker)) if speaker else None,
        "text": placeholder_segments(str(turn["text"])),
    }


def _record(index: int, record: Mapping[str, Any]) -> dict[str, Any]:
    missing = [key for key in _RECORD_KEYS if key not in record]
    if missing:
        raise InputError(f"review record {index} lacks {', '.join(missing)}")
    try:
        turns = [_turn(turn) for turn in record["turns"]]
    except KeyError as exc:
        raise InputError(f"review record {index} has a turn without {exc}") from exc
    shown = {key: str(record[key]) for key in ("id", "context", "risk_band")}
    return {**shown, "turns": turns}


def review_page_html(
    records: Sequence[Mapping[str, Any]], instructions_md: str | None = None
) -> str:
    """A self-contained HTML page for reviewers to read anonymized conversations offline.

    Args:
        records: ``{"id", "context", "risk_band", "turns": [{"speaker", "text"}]}`` each.
        instructions_md: shown at the top, preformatted; ``ANNOTATION_INSTRUCTIONS`` if None,
            nothing if empty.

    Raises:
        InputError: a record or a turn lacks a required key.
    """
    return _PAGES.render(
        "review.html",
        title="Review",
        # A constant of veiltune's own, not data: markup, so that it is not escaped.
        conversation_text_mark=Markup(CONVERSATION_TEXT_MARK),
        instructions=ANNOTATION_INSTRUCTIONS if instructions_md is None else instructions_md,
        records=[_record(index, record) for index, record in enumerate(records)],
    )
