from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from collections import Counter
from pathlib import Path

import pytest

from components.export.scan import (
    png_text_chunks,
    redact_record,
    redact_residual,
    scan_bundle,
    scan_files,
)
from tests.export.fixtures import SALT, inventory


def png_with_text(keyword: bytes, text: bytes, *, kind: bytes = b"tEXt") -> bytes:
    def chunk(name: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(name + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + name + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    if kind == b"zTXt":
        body = keyword + b"\x00\x00" + zlib.compress(text)
    elif kind == b"iTXt":
        body = keyword + b"\x00\x01\x00" + b"\x00\x00" + zlib.compress(text)
    else:
        body = keyword + b"\x00" + text
    pixels = zlib.compress(b"\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(kind, body)
        + chunk(b"IDAT", pixels)
        + chunk(b"IEND", b"")
    )


def clean_bundle(root: Path) -> Path:
    bundle = root / "bundle"
    (bundle / "metrics").mkdir(parents=True)
    (bundle / "metrics" / "risk.json").write_text('{"mean": 0.17, "by_type": {"PERSON_NAME": 3}}')
    (bundle / "report.html").write_text("<p>[PERSON_NAME_1] called about a refund</p>")
    (bundle / "chart.png").write_bytes(png_with_text(b"Title", b"residual risk"))
    (bundle / "font.otf").write_bytes(b"OTTO\x00\x01\x00\x00binary")
    return bundle


def test_a_clean_bundle_passes_and_says_what_it_skipped(tmp_path: Path) -> None:
    scan = scan_bundle(clean_bundle(tmp_path), inventory(), salt=SALT, min_chars=4)
    assert scan.passed, scan.leaks
    assert set(scan.scanned) == {"metrics/risk.json", "report.html", "chart.png"}
    assert scan.skipped["font.otf"] == "binary file (otf): no text to scan"
    assert scan.skipped["chart.png"].startswith("PNG image: text chunks scanned")
    assert scan.to_record()["passed"] is True


@pytest.mark.parametrize(
    ("name", "content", "entity_type"),
    [
        (
            "review/sample.jsonl",
            json.dumps({"text": "ask for Marta Kowalczyk"}).encode(),
            "PERSON_NAME",
        ),
        # The escaped newline glues an "n" onto the name in the raw text: found once decoded.
        ("metrics/x.json", json.dumps({"note": "line\nMarta Kowalczyk"}).encode(), "PERSON_NAME"),
        ("report.html", b"<td>Brightwave&#32;Logistics</td>", "ORGANIZATION_NAME_SPEAKER"),
        ("model_card.md", b"call 555-010-4477 now", "PHONE_NUMBER"),
        ("chart.png", png_with_text(b"Author", b"Marta Kowalczyk"), "PERSON_NAME"),
        ("chart.png", png_with_text(b"Author", b"Marta Kowalczyk", kind=b"zTXt"), "PERSON_NAME"),
        ("chart.png", png_with_text(b"Author", b"Marta Kowalczyk", kind=b"iTXt"), "PERSON_NAME"),
    ],
)
def test_a_planted_raw_value_is_caught(
    tmp_path: Path, name: str, *, content: bytes, entity_type: str
) -> None:
    bundle = clean_bundle(tmp_path)
    (bundle / name).parent.mkdir(parents=True, exist_ok=True)
    (bundle / name).write_bytes(content)
    scan = scan_bundle(bundle, inventory(), salt=SALT, min_chars=4)
    assert not scan.passed
    assert dict(scan.leaks) == {name: {entity_type: 1}}
    assert "Kowalczyk" not in scan.describe_leaks() and name in scan.describe_leaks()


def test_the_scan_reads_a_zip_and_zips_inside_it(tmp_path: Path) -> None:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("notes.txt", "Marta Kowalczyk")
    outer = tmp_path / "bundle.zip"
    with zipfile.ZipFile(outer, "w") as archive:
        archive.writestr("report.html", "<p>clean</p>")
        archive.writestr("extra/inner.zip", inner.getvalue())
    scan = scan_bundle(outer, inventory(), salt=SALT, min_chars=4)
    assert dict(scan.leaks) == {"extra/inner.zip!notes.txt": {"PERSON_NAME": 1}}
    assert "report.html" in scan.scanned


def test_values_below_min_chars_and_other_salts_do_not_match() -> None:
    files = [("a.txt", b"Marta Kowalczyk")]
    assert not scan_files(files, inventory(), salt=SALT, min_chars=4).passed
    assert scan_files(files, inventory(), salt=SALT, min_chars=40).passed
    assert scan_files(files, inventory(), salt="another-salt", min_chars=4).passed


def test_png_text_chunks_are_decoded() -> None:
    assert png_text_chunks(png_with_text(b"Title", b"hello")) == ["Title\nhello"]


def test_redaction_masks_each_value_in_place() -> None:
    text = "so MARTA Kowalczyk said: Brightwave Logistics? yes, 555.010.4477!"
    masked, counts = redact_residual(text, inventory(), salt=SALT, min_chars=4)
    assert masked == (
        "so [RESIDUAL_PERSON_NAME] said: [RESIDUAL_ORGANIZATION_NAME_SPEAKER]? yes, "
        "[RESIDUAL_PHONE_NUMBER]!"
    )
    assert counts == Counter({"PERSON_NAME": 1, "ORGANIZATION_NAME_SPEAKER": 1, "PHONE_NUMBER": 1})
    assert scan_files([("t", masked.encode())], inventory(), salt=SALT, min_chars=4).passed
    assert redact_residual("nothing to see", inventory(), salt=SALT, min_chars=4) == (
        "nothing to see",
        Counter(),
    )


def test_redact_record_masks_strings_and_keeps_structure() -> None:
    record = {"id": "c1", "turns": [{"speaker": "Marta Kowalczyk", "text": "hi"}], "n": 2}
    counts: Counter[str] = Counter()
    masked = redact_record(record, inventory(), salt=SALT, min_chars=4, counts=counts)
    assert masked == {
        "id": "c1",
        "turns": [{"speaker": "[RESIDUAL_PERSON_NAME]", "text": "hi"}],
        "n": 2,
    }
    assert counts == Counter({"PERSON_NAME": 1})
