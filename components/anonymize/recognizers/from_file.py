"""A user's own recognizers without code (``anonymize.recognizers_file``): patterns and word
lists in Presidio's YAML format, each reporting an info type the run detects.

    recognizers:
      - name: CustomerIdRecognizer
        supported_entity: FINANCIAL_ACCOUNT_NUMBER   # a DLP info type of anonymize.info_types
        patterns:
          - {name: customer id, regex: "\\bCU-\\d{6}\\b", score: 0.9}
        context: [customer, account]
      - name: ProjectNameRecognizer
        supported_entity: ORGANIZATION_NAME
        deny_list: [Bluebird, Nightjar]

Each entry is what Presidio's ``PatternRecognizer.from_dict`` takes. A mistake is one error
naming the file, the entry and what is wrong, before any text is read.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from components.anonymize.taxonomy import to_dlp, to_presidio
from components.core.config import read_policy_yaml
from components.core.errors import InputError


def recognizers_from_file(path: Path, info_types: Collection[str]) -> list[Any]:
    """The pattern recognizers ``path`` describes; each must report one of ``info_types``
    (a recognizer of a type the run does not detect would never run)."""
    from presidio_analyzer import PatternRecognizer

    where = f"{path} (anonymize.recognizers_file)"
    document = read_policy_yaml(
        path, f"{where}: no such file", malformed=f"{where}: not a YAML file"
    )
    entries = document.get("recognizers") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError(f"{where}: expected a non-empty list under `recognizers:`")
    recognizers = []
    for index, entry in enumerate(entries):
        name = entry.get("name", "") if isinstance(entry, dict) else ""
        at = f"{where}: recognizers[{index}]" + (f" ({name})" if name else "")
        if not isinstance(entry, dict) or not name:
            raise InputError(f"{at}: expected a mapping with a `name`")
        info_type = to_dlp(str(entry.get("supported_entity", "")))
        if info_type not in info_types:
            raise InputError(
                f"{at}: supported_entity {entry.get('supported_entity')!r} is not an info type "
                f"this run detects; one of anonymize.info_types: {', '.join(sorted(info_types))}"
            )
        if not entry.get("patterns") and not entry.get("deny_list"):
            raise InputError(f"{at}: needs `patterns` or a `deny_list`")
        # Reported under the Presidio name the detector asks its analyzer for, whichever
        # name of the type the file used.
        entry = {"supported_language": "en", **entry, "supported_entity": to_presidio(info_type)}
        try:
            recognizers.append(PatternRecognizer.from_dict(entry))
        except (TypeError, ValueError, KeyError) as exc:
            raise InputError(f"{at}: {exc}") from exc
    return recognizers
