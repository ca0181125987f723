"""The review page: offline, escaped, placeholders highlighted, instructions included."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from components.core.errors import InputError
from components.core.purge import CONVERSATION_TEXT_MARK, is_conversation_data
from components.review.page import ANNOTATION_INSTRUCTIONS, review_page_html

RECORDS: list[dict[str, Any]] = [
    {
        "id": "conv-1",
        "context": "support",
        "risk_band": "high",
        "turns": [
            {"speaker": "[PERSON_NAME_1]", "text": "Hi, <b>I am</b> [PERSON_NAME_2] Green & co"},
            {"speaker": None, "text": "call [PHONE_NUMBER_1] or 555 0199"},
        ],
    },
    {"id": "conv-<2>", "context": "sales", "risk_band": "low", "turns": []},
]


def test_review_page_escapes_text_and_highlights_placeholders() -> None:
    page = review_page_html(RECORDS)
    assert "<b>" not in page
    assert "&lt;b&gt;I am&lt;/b&gt;" in page and "Green &amp; co" in page
    for placeholder in ("[PERSON_NAME_2]", "[PHONE_NUMBER_1]"):
        assert f'<span class="placeholder">{placeholder}</span>' in page
    assert '<strong><span class="placeholder">[PERSON_NAME_1]</span>:</strong>' in page
    assert '<p class="turn">call' in page  # no speaker, no label
    assert "<h2>conv-1</h2>" in page and "<h2>conv-&lt;2&gt;</h2>" in page
    assert "<dd>high</dd>" in page and "<dd>sales</dd>" in page
    assert "http://" not in page and "https://" not in page and "<script" not in page


def test_a_script_anywhere_in_a_record_is_shown_as_text() -> None:
    script = "<script>alert(1)</script>"
    record = {
        "id": script,
        "context": script,
        "risk_band": script,
        "turns": [{"speaker": script, "text": f"[PERSON_NAME_1] {script}"}],
    }
    page = review_page_html([record], instructions_md=script)
    assert "<script" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 6


def test_the_page_carries_the_conversation_text_mark_for_purge(tmp_path: Path) -> None:
    page = review_page_html(RECORDS)
    assert CONVERSATION_TEXT_MARK in page[: page.index("<style>")]
    (tmp_path / "review.html").write_text(page, encoding="utf-8")
    assert is_conversation_data(tmp_path / "review.html")


def test_review_page_includes_the_annotation_instructions() -> None:
    page = review_page_html(RECORDS)
    for example in (
        "(Dunder Mifflin)[MISSED_ORGANIZATION_NAME_SPEAKER]",
        "(Green)[MISSED_PERSON_NAME_PARTIAL]",
        "(555 0199)[MISSED_PHONE_NUMBER]",
        "veiltune review import --input FILE",
    ):
        assert example in ANNOTATION_INSTRUCTIONS
        assert example in page
    assert "(missed text)[MISSED_&lt;INFO_TYPE&gt;]" in page


def test_review_page_takes_custom_instructions_or_none() -> None:
    custom = review_page_html(RECORDS, instructions_md="Look for <names>.")
    assert "Look for &lt;names&gt;." in custom and "MISSED_PHONE_NUMBER" not in custom
    assert '<pre class="instructions">' not in review_page_html(RECORDS, instructions_md="")


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"id": "x", "context": "support", "turns": []}, "review record 0 lacks risk_band"),
        (
            {"id": "x", "context": "s", "risk_band": "low", "turns": [{"speaker": "A"}]},
            "review record 0 has a turn without 'text'",
        ),
    ],
)
def test_review_page_rejects_incomplete_records(record: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        review_page_html([record])
