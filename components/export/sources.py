"""What goes into the compliance bundle, beside the files copied as they are: the policy as
it may be shown, the review sample with its residual PI masked, the optional utility report,
and the registered version as the model registry holds it at export time."""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.core.errors import InputError
from components.core.jsonio import iter_jsonl
from components.core.lineage import sha256_file
from components.export.detector_scan import DetectorScanPolicy, mask_records
from components.export.scan import redact_record
from components.ingest import InventoryEntry

logger = logging.getLogger(__name__)

Contents = dict[str, Path | bytes]
REVIEW_SAMPLE = "review_sample.jsonl"
REVIEW_PAGE = "review.html"
UTILITY_FILES = ("utility.md", "utility.json", "utility.png")
DICTIONARY_NOTE = (
    "Custom dictionaries name the people and companies always redacted: they are personal "
    "information by construction, so the bundle holds each list's sha256 and term count, not "
    "its terms. Check a list against its sha256 where the policy folder is kept."
)


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def folder_contents(folder: Path, prefix: str) -> Contents:
    """Every file under ``folder`` as ``prefix/relative/path``.

    Raises:
        InputError: ``folder`` does not exist.
    """
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder; run the stage that writes it first")
    return {
        f"{prefix}/{path.relative_to(folder).as_posix()}": path
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def count_terms(path: Path) -> int:
    """Terms in a policy list: non-blank lines that are not ``#`` comments."""
    with path.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip() and not line.lstrip().startswith("#"))


def policy_contents(
    anonymize: Mapping[str, Any], base_dir: Path
) -> tuple[Contents, dict[str, Any]]:
    """The anonymization policy: its params, the exclusion lists verbatim (words kept in
    clear, which the anonymized corpus shows anyway), and the custom dictionaries by sha256
    and term count only. Returns the bundle contents and a summary for the report.

    Raises:
        InputError: a list that ``anonymize.exclusions`` or ``.dictionaries`` names is missing.
    """
    contents: Contents = {"policy/anonymize.json": _json_bytes(dict(anonymize))}
    summary: dict[str, Any] = {"exclusions": {}, "dictionaries": {}}
    for kind in ("exclusions", "dictionaries"):
        for info_type, relative in sorted((anonymize.get(kind) or {}).items()):
            path = base_dir / relative
            if not path.is_file():
                raise InputError(f"{path}: no such term list (anonymize.{kind}.{info_type})")
            if kind == "exclusions":
                contents[f"policy/exclusions/{info_type}.txt"] = path
                summary["exclusions"][info_type] = count_terms(path)
            else:
                summary["dictionaries"][info_type] = {
                    "path": str(relative),
                    "sha256": sha256_file(path),
                    "n_terms": count_terms(path),
                }
    contents["policy/dictionaries.json"] = _json_bytes(
        {"note": DICTIONARY_NOTE, "lists": summary["dictionaries"]}
    )
    return contents, summary


def review_contents(
    review_dir: Path,
    entries: list[InventoryEntry],
    *,
    salt: str,
    min_chars: int,
    detector: DetectorScanPolicy | None = None,
) -> tuple[Contents, dict[str, Any]]:
    """The review sample with the PI it still holds (what anonymization missed) masked as
    ``[RESIDUAL_<TYPE>]``: in each record, every identifying inventory value, and every value
    of that conversation's own inventory, lone common words included (in its own
    conversation such a word is most likely the person, not chance); then, with
    ``detector``, whatever the detector finds (a corpus without labels has no inventory).
    The JSONL records are masked string by string, the reading page rendered again from
    them, any other file (annotation scores) copied as it is.

    Returns the bundle contents under ``review/`` and ``{"n_records", "residual_masked",
    "detector_masked"}``.
    """
    from components.review import review_page_html

    contents = folder_contents(review_dir, "review")
    specific = [e for e in entries if e.specific]
    common_by_conversation: dict[str, list[InventoryEntry]] = defaultdict(list)
    for entry in entries:
        if not entry.specific:
            common_by_conversation[entry.conversation_id].append(entry)
    counts: Counter[str] = Counter()
    detected: Counter[str] = Counter()
    records: list[dict[str, Any]] = []
    for path in sorted(review_dir.glob("*.jsonl")):
        masked = []
        for _, obj in iter_jsonl(path):
            own = common_by_conversation.get(str(obj.get("id")), [])
            masked.append(
                redact_record(obj, specific + own, salt=salt, min_chars=min_chars, counts=counts)
            )
        if detector is not None:
            masked = mask_records(masked, detector, counts=detected)
        contents[f"review/{path.name}"] = b"".join(
            (json.dumps(r, ensure_ascii=False) + "\n").encode() for r in masked
        )
        if path.name == REVIEW_SAMPLE:
            records = masked
    if (review_dir / REVIEW_PAGE).is_file():
        contents[f"review/{REVIEW_PAGE}"] = review_page_html(records).encode()
    if counts or detected:
        logger.info(
            "review sample: masked by inventory %s, by the detector %s",
            dict(counts),
            dict(detected),
        )
    return contents, {
        "n_records": len(records),
        "residual_masked": dict(sorted(counts.items())),
        "detector_masked": dict(sorted(detected.items())),
    }


def utility_contents(folder: Path) -> tuple[Contents, dict[str, Any] | None, bytes | None]:
    """The privacy–utility report when ``veiltune utility-report`` made one: bundle contents,
    its JSON and its chart. Nothing (and None, None) when absent."""
    present = {name: folder / name for name in UTILITY_FILES if (folder / name).is_file()}
    if "utility.json" not in present:
        return {}, None, None
    try:
        report = json.loads(present["utility.json"].read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{present['utility.json']}: malformed JSON: {exc.msg}") from exc
    png = present["utility.png"].read_bytes() if "utility.png" in present else None
    return {f"utility/{name}": path for name, path in present.items()}, report, png


def registry_status(register: Mapping[str, Any]) -> dict[str, Any]:
    """The registered version's aliases as the MLflow registry holds them now (tracking must
    be configured), and which version holds ``champion``; ``metrics/register.json`` when the
    registry cannot answer."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    name, version = str(register["model_name"]), str(register["model_version"])
    status = {"model_name": name, "model_version": version}
    try:
        client = MlflowClient()
        aliases = sorted(client.get_model_version(name, version).aliases)
        holders = client.get_registered_model(name).aliases
    except MlflowException as exc:
        logger.warning("registry did not answer (%s): aliases from register.json", exc.error_code)
        return {
            **status,
            "aliases": list(register.get("aliases", [])),
            "aliases_source": "metrics/register.json (the registry did not answer)",
            "champion_version": version if "champion" in register.get("aliases", []) else None,
        }
    return {
        **status,
        "aliases": aliases,
        "aliases_source": "MLflow model registry at export time",
        "champion_version": str(holders["champion"]) if "champion" in holders else None,
    }
