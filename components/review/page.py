"""The review page: anonymized conversations for reviewers to read offline, placeholders
highlighted, with the instructions for annotating what the anonymization missed.

The page is self-contained (inline CSS, no scripts, no external resources) and escapes every
string that comes from data. It carries the conversation-text mark that ``purge-raw`` looks for.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from components.core.errors import InputError
from components.core.html import html_page
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

_REVIEW_CSS = """\
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
pre.instructions { background: #f4f4f4; padding: 1em; white-space: pre-wrap; }
section.record { border-top: 1px solid #bbb; padding: 0.5em 0; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.meta dt { font-weight: bold; }
dl.meta dd { margin: 0; }
p.turn { white-space: pre-wrap; margin: 0.4em 0; }
span.placeholder { background: #fff3b0; border-radius: 3px; padding: 0 0.15em;
  font-family: ui-monospace, monospace; }
"""


def highlight_placeholders(text: str) -> str:
    """``text`` escaped for HTML, with every ``[TYPE_N]`` placeholder wrapped in a span."""
    parts = []
    position = 0
    for match in NUMBERED_PLACEHOLDER.finditer(text):
        parts.append(html.escape(text[position : match.start()]))
        parts.append(f'<span class="placeholder">{html.escape(match.group())}</span>')
        position = match.end()
    parts.append(html.escape(text[position:]))
    return "".join(parts)


def _turn_html(turn: Mapping[str, Any]) -> str:
    speaker = turn.get("speaker")
    label = f"<strong>{highlight_placeholders(str(speaker))}:</strong> " if speaker else ""
    return f'<p class="turn">{label}{highlight_placeholders(str(turn["text"]))}</p>'


def _record_html(index: int, record: Mapping[str, Any]) -> str:
    missing = [key for key in _RECORD_KEYS if key not in record]
    if missing:
        raise InputError(f"review record {index} lacks {', '.join(missing)}")
    meta = "".join(
        f"<dt>{name}</dt><dd>{html.escape(str(record[key]))}</dd>"
        for name, key in (("context", "context"), ("risk band", "risk_band"))
    )
    try:
        turns = "\n".join(_turn_html(turn) for turn in record["turns"])
    except KeyError as exc:
        raise InputError(f"review record {index} has a turn without {exc}") from exc
    return (
        f'<section class="record">\n<h2>{html.escape(str(record["id"]))}</h2>\n'
        f'<dl class="meta">{meta}</dl>\n{turns}\n</section>'
    )


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
    instructions = ANNOTATION_INSTRUCTIONS if instructions_md is None else instructions_md
    parts = [f"<h1>Review: {len(records)} anonymized conversations</h1>"]
    if instructions:
        parts.append(f'<pre class="instructions">{html.escape(instructions)}</pre>')
    parts.extend(_record_html(index, record) for index, record in enumerate(records))
    return html_page("Review", _REVIEW_CSS, "\n".join(parts), CONVERSATION_TEXT_MARK + "\n")
