"""A local gRPC server for ``google.privacy.dlp.v2.DlpService/InspectContent``.

It speaks the real protocol (the installed package's protobuf messages, on 127.0.0.1 over
a plaintext channel) and applies the request's own configuration the way DLP documents it:
custom dictionaries (whole words, case-insensitive) and regexes, exclusion rules (full or
partial match), hotword rules (a window before the finding, likelihood fixed or raised),
the likelihood floor and the findings limit; its built-in detectors are EMAIL_ADDRESS,
PHONE_NUMBER and CREDIT_CARD_NUMBER (Luhn-checked). Findings carry code point and UTF-8
byte ranges, and their table row. Faults are queued per call (``Fault``).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.cloud import dlp_v2

SERVICE = "google.privacy.dlp.v2.DlpService"
REQUEST = dlp_v2.InspectContentRequest.pb()
RESPONSE = dlp_v2.InspectContentResponse.pb()
Likelihood = dlp_v2.Likelihood

_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
_PHONE = re.compile(r"(?<!\d)(?:\+1[ -]?)?\(?\d{3}\)?[ -]?\d{3}-\d{4}(?!\d)")
_CARD = re.compile(r"(?<!\d)\d(?:[ -]?\d){12,18}(?!\d)")


def luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _builtins(text: str) -> Iterator[tuple[str, int, int, int]]:
    for m in _EMAIL.finditer(text):
        yield "EMAIL_ADDRESS", m.start(), m.end(), Likelihood.LIKELY
    for m in _PHONE.finditer(text):
        yield "PHONE_NUMBER", m.start(), m.end(), Likelihood.LIKELY
    for m in _CARD.finditer(text):
        if luhn(re.sub(r"\D", "", m.group())):
            yield "CREDIT_CARD_NUMBER", m.start(), m.end(), Likelihood.VERY_LIKELY


@dataclass
class Fault:
    """What the server does instead of (or on top of) answering one call."""

    code: grpc.StatusCode | None = None  # abort with this status
    delay: float = 0.0  # hold the answer this long first
    shuffle: bool = False  # findings reversed, each twice and with a shorter overlap of it


@dataclass
class FakeDlp:
    """The servicer: the requests it got (raw protobuf) and the faults it has left."""

    faults: list[Fault] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def inspect_content(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self.lock:
            self.requests.append(request)
            fault = self.faults.pop(0) if self.faults else Fault()
        if fault.delay:
            time.sleep(fault.delay)
        if fault.code is not None:
            context.abort(fault.code, f"fake DLP: {fault.code.name}")
        return inspect(request, shuffle=fault.shuffle)


def inspect(request: Any, shuffle: bool = False) -> Any:
    """DLP's answer to one request, computed from the request's own config."""
    config = request.inspect_config
    item = request.item
    if item.HasField("table"):
        cells = [(row.values[0].string_value, i) for i, row in enumerate(item.table.rows)]
    else:
        cells = [(item.value, -1)]
    found = []
    for text, row in cells:
        found += [(row, text, *f) for f in _findings(text, config)]
    response = RESPONSE()
    limit = config.limits.max_findings_per_request or 3000
    if len(found) > limit:
        found = found[:limit]
        response.result.findings_truncated = True
    if shuffle:
        found = [
            copy
            for f in reversed(found)
            for copy in (f, (*f[:4], f[4] - 1, Likelihood.UNLIKELY), f)
        ]
    for row, text, name, start, end, likelihood in found:
        end = min(end, len(text))
        finding = response.result.findings.add()
        finding.info_type.name = name
        finding.likelihood = likelihood
        if config.include_quote:
            finding.quote = text[start:end]
        location = finding.location
        location.codepoint_range.start, location.codepoint_range.end = start, end
        location.byte_range.start = len(text[:start].encode("utf-8"))
        location.byte_range.end = len(text[:end].encode("utf-8"))
        if row >= 0:
            content = location.content_locations.add()
            content.record_location.table_location.row_index = row
    return response


def _findings(text: str, config: Any) -> list[tuple[str, int, int, int]]:
    selected = {t.name for t in config.info_types}
    found = [f for f in _builtins(text) if f[0] in selected]
    for custom in config.custom_info_types:
        likelihood = custom.likelihood or Likelihood.VERY_LIKELY
        for start, end in _custom_matches(custom, text):
            found.append((custom.info_type.name, start, end, likelihood))
    for rule_set in config.rule_set:
        names = {t.name for t in rule_set.info_types}
        for rule in rule_set.rules:
            found = [
                adjusted
                for f in found
                if (adjusted := _apply(rule, f, text=text) if f[0] in names else f) is not None
            ]
    floor = config.min_likelihood or Likelihood.POSSIBLE
    return [f for f in found if f[3] >= floor]


def _custom_matches(custom: Any, text: str) -> list[tuple[int, int]]:
    if custom.HasField("dictionary"):
        return _word_matches(list(custom.dictionary.word_list.words), text)
    if custom.HasField("regex"):
        return [m.span() for m in re.finditer(custom.regex.pattern, text)]
    return []


def _word_matches(words: list[str], text: str) -> list[tuple[int, int]]:
    if not words:
        return []
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return [m.span() for m in re.finditer(rf"(?<!\w)(?:{alternatives})(?!\w)", text, re.I)]


def _apply(rule: Any, finding: tuple[str, int, int, int], *, text: str) -> Any:
    """The finding after one rule: dropped (None), re-rated, or as it was."""
    name, start, end, likelihood = finding
    if rule.HasField("exclusion_rule"):
        exclusion = rule.exclusion_rule
        words = {w.lower() for w in exclusion.dictionary.word_list.words}
        surface = text[start:end].lower()
        full = exclusion.matching_type == dlp_v2.MatchingType.MATCHING_TYPE_FULL_MATCH
        hit = surface in words if full else any(w in surface for w in words)
        return None if hit else finding
    hotword = rule.hotword_rule
    window = text[max(0, start - hotword.proximity.window_before) : start]
    if not re.search(hotword.hotword_regex.pattern, window):
        return finding
    adjustment = hotword.likelihood_adjustment
    if adjustment.fixed_likelihood:
        return (name, start, end, adjustment.fixed_likelihood)
    raised = min(Likelihood.VERY_LIKELY, likelihood + adjustment.relative_likelihood)
    return (name, start, end, max(Likelihood.VERY_UNLIKELY, raised))


class FakeDlpServer:
    """The fake on an ephemeral 127.0.0.1 port; ``endpoint`` is its ``host:port``."""

    def __init__(self) -> None:
        self.dlp = FakeDlp()
        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "InspectContent": grpc.unary_unary_rpc_method_handler(
                    self.dlp.inspect_content,
                    request_deserializer=REQUEST.FromString,
                    response_serializer=RESPONSE.SerializeToString,
                )
            },
        )
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self._server.add_generic_rpc_handlers((handler,))
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"127.0.0.1:{port}"

    def __enter__(self) -> FakeDlpServer:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)
