"""Google Cloud DLP as a detection backend: ``inspect_content`` on batches of texts.

Texts go as the rows of a one-column table, as many per request as DLP's 0.5 MB request
limit allows once the inspect config is counted; a response that hit the findings limit is
asked again in halves. Offsets come back per cell, in code points (Python's ``str``
offsets) or, failing that, in UTF-8 bytes, which are mapped to code points.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import google.auth.exceptions
from google.api_core import exceptions as api_exceptions
from google.cloud import dlp_v2

from components.anonymize.compose import UnionDetector
from components.anonymize.config import DlpConfig
from components.anonymize.dlp_rules import DlpRules
from components.anonymize.spans import Span, resolve_overlaps, text_windows
from components.core.egress import grpc_proxy_options
from components.core.errors import BackendError

logger = logging.getLogger(__name__)

# google_dlp+presidio: Cloud DLP and Presidio side by side (the union of their spans).
LayeredDetector = UnionDetector

REQUEST_LIMIT_BYTES = 500_000  # DLP's limit on one inspect_content request
REQUEST_MARGIN_BYTES = 10_000  # the envelope: parent, table framing, field tags
ROW_OVERHEAD_BYTES = 16  # a row's and its value's tags and lengths
MAX_ROWS = 10_000  # cells per table request, well under DLP's 50,000
MAX_FINDINGS = 3_000  # DLP's most findings per inspect_content request
# A long text's pieces overlap by this much: a finding cut by one edge is whole in the next,
# with the 100 characters a username hotword may come before it.
PIECE_OVERLAP = 300
BYTES_PER_GB = 1_000_000_000
SOURCE = "google_dlp"  # Span.source: "google_dlp/<the name DLP reported>"
# Likelihood -> score, so overlaps and propagation weigh DLP's findings as Presidio's.
LIKELIHOOD_SCORE = {
    dlp_v2.Likelihood.VERY_UNLIKELY: 0.1,
    dlp_v2.Likelihood.UNLIKELY: 0.3,
    dlp_v2.Likelihood.POSSIBLE: 0.5,
    dlp_v2.Likelihood.LIKELY: 0.75,
    dlp_v2.Likelihood.VERY_LIKELY: 0.95,
}
RETRYABLE = (
    api_exceptions.ServiceUnavailable,
    api_exceptions.ResourceExhausted,
    api_exceptions.DeadlineExceeded,
)


class DlpClient(Protocol):
    """What the backend calls: ``google.cloud.dlp_v2.DlpServiceClient`` or a stand-in."""

    def inspect_content(self, request: Any, *, retry: Any, timeout: float) -> Any: ...


@dataclass
class Backoff:
    """Exponential backoff between attempts; ``sleep`` is injectable so tests wait for nothing."""

    initial: float = 1.0
    multiplier: float = 2.0
    sleep: Callable[[float], None] = time.sleep


@dataclass
class DlpUsage:
    """What a run asked of DLP: the metrics and the cost line (no text kept)."""

    price_per_gb: float
    requests: int = 0  # every call, retries included
    retries: int = 0
    bytes_inspected: int = 0  # UTF-8 bytes of the texts DLP answered for

    def to_metrics(self) -> dict[str, Any]:
        gigabytes = self.bytes_inspected / BYTES_PER_GB
        return {
            "dlp_requests": self.requests,
            "dlp_retries": self.retries,
            "dlp_bytes_inspected": self.bytes_inspected,
            "dlp_estimated_cost_usd": round(gigabytes * self.price_per_gb, 6),
        }


@dataclass
class GoogleDlpDetector:
    """Finds personal information with Cloud DLP; reports veiltune's (DLP's) info types."""

    client: DlpClient
    rules: DlpRules
    settings: DlpConfig
    backoff: Backoff = field(default_factory=Backoff)
    usage: DlpUsage = field(init=False)

    def __post_init__(self) -> None:
        self.usage = DlpUsage(self.settings.price_per_gb)
        self._parent = f"projects/{self.settings.project}/locations/{self.settings.location}"
        self._content_budget = (
            REQUEST_LIMIT_BYTES
            - REQUEST_MARGIN_BYTES
            - dlp_v2.InspectConfig.pb(self.rules.inspect_config).ByteSize()
        )
        if self._content_budget <= 0:
            raise BackendError(
                "the DLP inspect config alone passes DLP's 0.5 MB request limit: shorten "
                "the word lists of anonymize.exclusions and anonymize.dictionaries"
            )

    def usage_metrics(self) -> dict[str, Any]:
        """Requests, retries, bytes inspected and their estimated cost (the stage's metrics)."""
        return self.usage.to_metrics()

    def detect(self, texts: Sequence[str], batch_size: int = 64) -> list[list[Span]]:
        """Spans of the selected info types in each text, in input order; ``batch_size`` is
        Presidio's: DLP's batches are sized by bytes. A text too long for one request goes
        in overlapping pieces, cut at spaces."""
        max_chars = (self._content_budget - ROW_OVERHEAD_BYTES) // 4  # 4 bytes a char at most
        pieces = [
            (i, start, text[start:end])
            for i, text in enumerate(texts)
            for start, end in self._pieces(text, max_chars)
        ]
        piece_texts = [piece for _, _, piece in pieces]
        encoded = [piece.encode("utf-8") for piece in piece_texts]
        found: list[list[Span]] = [[] for _ in texts]
        for rows in self._batches(encoded):
            for row, spans in zip(
                rows, self._inspect(rows, piece_texts, encoded=encoded), strict=True
            ):
                i, offset, _ = pieces[row]
                found[i] += [replace(s, start=s.start + offset, end=s.end + offset) for s in spans]
        return [resolve_overlaps(spans) for spans in found]

    def _pieces(self, text: str, max_chars: int) -> list[tuple[int, int]]:
        if len(text.encode("utf-8")) + ROW_OVERHEAD_BYTES <= self._content_budget:
            return [(0, len(text))]
        return text_windows(text, max_chars, overlap=PIECE_OVERLAP)

    def _batches(self, encoded: Sequence[bytes]) -> Iterator[list[int]]:
        """Indices of the non-empty texts, grouped under the request limits."""
        batch: list[int] = []
        size = 0
        for i, data in enumerate(encoded):
            cost = len(data) + ROW_OVERHEAD_BYTES
            if not data.strip():
                continue
            if batch and (size + cost > self._content_budget or len(batch) == MAX_ROWS):
                yield batch
                batch, size = [], 0
            batch.append(i)
            size += cost
        if batch:
            yield batch

    def _inspect(
        self, rows: list[int], texts: Sequence[str], *, encoded: Sequence[bytes]
    ) -> list[list[Span]]:
        """The spans of each of ``rows``; asked again in halves when findings were cut."""
        result = self._call(self._request([texts[i] for i in rows])).result
        self.usage.bytes_inspected += sum(len(encoded[i]) for i in rows)  # billed, cut or not
        if result.findings_truncated:
            if len(rows) == 1:
                raise BackendError(
                    f"one text has more than {MAX_FINDINGS} DLP findings (DLP's limit per "
                    "request): split it, or narrow anonymize.info_types"
                )
            half = len(rows) // 2
            return [
                *self._inspect(rows[:half], texts, encoded=encoded),
                *self._inspect(rows[half:], texts, encoded=encoded),
            ]
        spans: list[list[Span]] = [[] for _ in rows]
        for finding in result.findings:
            row = _row_of(finding)
            if not 0 <= row < len(rows):
                raise BackendError(f"DLP reported a finding in row {row} of {len(rows)}")
            span = self._span(finding, texts[rows[row]], data=encoded[rows[row]])
            if span is not None:
                spans[row].append(span)
        return spans

    def _request(self, texts: Sequence[str]) -> dlp_v2.InspectContentRequest:
        table = dlp_v2.Table(
            headers=[dlp_v2.FieldId(name="text")],
            rows=[dlp_v2.Table.Row(values=[dlp_v2.Value(string_value=t)]) for t in texts],
        )
        return dlp_v2.InspectContentRequest(
            parent=self._parent,
            inspect_config=self.rules.inspect_config,
            item=dlp_v2.ContentItem(table=table),
        )

    def _span(self, finding: Any, text: str, *, data: bytes) -> Span | None:
        """The finding as a span of ``text``, or None for a name veiltune did not ask for."""
        info_type = self.rules.info_type_of.get(finding.info_type.name)
        if info_type is None:
            return None
        start, end = _char_range(finding.location, text, data=data)
        score = LIKELIHOOD_SCORE.get(finding.likelihood, 0.5)
        return Span(start, end, info_type, score, f"{SOURCE}/{finding.info_type.name}")

    def _call(self, request: dlp_v2.InspectContentRequest) -> Any:
        """One inspect_content, retried on transient codes with backoff in a bounded total."""
        delay, waited = self.backoff.initial, 0.0
        for attempt in range(1, self.settings.max_attempts + 1):
            self.usage.requests += 1
            try:
                return self.client.inspect_content(
                    request=request, retry=None, timeout=self.settings.timeout
                )
            except RETRYABLE as exc:
                if attempt == self.settings.max_attempts or waited + delay > (
                    self.settings.retry_seconds
                ):
                    raise BackendError(
                        f"Cloud DLP (project {self.settings.project!r}) still answers "
                        f"{_code(exc)} after {attempt} attempts and {waited:.1f} s of backoff "
                        "(anonymize.dlp.max_attempts, anonymize.dlp.retry_seconds, "
                        "anonymize.dlp.timeout); nothing was written"
                    ) from exc
                logger.warning("DLP answered %s; retrying in %.1f s", _code(exc), delay)
                self.backoff.sleep(delay)
                self.usage.retries += 1
                waited += delay
                delay *= self.backoff.multiplier
            except api_exceptions.GoogleAPICallError as exc:
                raise BackendError(_refusal(exc, self.settings)) from exc
            except google.auth.exceptions.GoogleAuthError as exc:
                raise BackendError(
                    f"no usable Google credentials for Cloud DLP (project "
                    f"{self.settings.project!r}, anonymize.dlp.project): {exc}"
                ) from exc
        raise AssertionError("unreachable: max_attempts >= 1")


def _code(exc: api_exceptions.GoogleAPICallError) -> str:
    code = exc.grpc_status_code
    return code.name if code is not None else type(exc).__name__


def _refusal(exc: api_exceptions.GoogleAPICallError, settings: DlpConfig) -> str:
    """A refusal, naming the project and the setting to look at."""
    where = f"Cloud DLP refused project {settings.project!r} (anonymize.dlp.project)"
    if isinstance(exc, api_exceptions.PermissionDenied | api_exceptions.Unauthenticated):
        return (
            f"{where}: {_code(exc)}: {exc.message}. The credentials (Application Default "
            "Credentials or GOOGLE_APPLICATION_CREDENTIALS) need roles/dlp.user on the project"
        )
    if isinstance(exc, api_exceptions.InvalidArgument):
        return (
            f"{where}: INVALID_ARGUMENT: {exc.message}. Check anonymize.info_types (DLP's "
            "names), anonymize.dlp.location, anonymize.dlp.min_likelihood and the word lists "
            "of anonymize.exclusions and anonymize.dictionaries"
        )
    return f"{where}: {_code(exc)}: {exc.message}"


def _row_of(finding: Any) -> int:
    """The table row a finding is in (0 when DLP names none: a one-row request)."""
    for location in finding.location.content_locations:
        if "record_location" in location:
            return int(location.record_location.table_location.row_index)
    return 0


def _char_range(location: Any, text: str, *, data: bytes) -> tuple[int, int]:
    """Python string offsets of a finding: its code point range, else its byte range."""
    if "codepoint_range" in location:
        start, end = location.codepoint_range.start, location.codepoint_range.end
    else:
        start, end = (
            byte_to_char(data, location.byte_range.start),
            byte_to_char(data, location.byte_range.end),
        )
    if not 0 <= start < end <= len(text):
        raise BackendError(f"DLP reported offsets {start}..{end} outside a {len(text)}-char text")
    return int(start), int(end)


def byte_to_char(data: bytes, offset: int) -> int:
    """The code point index of UTF-8 byte ``offset`` of ``data`` (a character's first byte,
    or the end)."""
    return len(data[:offset].decode("utf-8", errors="ignore"))


def dlp_client(settings: DlpConfig) -> DlpClient:
    """The real DLP client: Google's endpoint with Application Default Credentials, a
    private ``endpoint``, or a plaintext local one (``insecure``, no credentials). Its
    channel goes through ``anonymize.dlp.proxy`` to a remote endpoint when that names one,
    and through no proxy otherwise: never one of the environment's."""
    from google.cloud.dlp_v2.services.dlp_service.transports import DlpServiceGrpcTransport

    options = grpc_proxy_options(settings.host, settings.proxy)
    if settings.insecure:
        import grpc

        channel = grpc.insecure_channel(settings.endpoint, options=options)
        return dlp_v2.DlpServiceClient(transport=DlpServiceGrpcTransport(channel=channel))

    def channel_with_route(*args: Any, **kwargs: Any) -> Any:
        kwargs["options"] = [*kwargs.get("options", ()), *options]
        return DlpServiceGrpcTransport.create_channel(*args, **kwargs)

    endpoint = {"api_endpoint": settings.endpoint} if settings.endpoint else None
    try:
        return dlp_v2.DlpServiceClient(
            client_options=endpoint,
            transport=functools.partial(DlpServiceGrpcTransport, channel=channel_with_route),
        )
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise BackendError(
            f"no Google credentials for Cloud DLP (project {settings.project!r}, "
            "anonymize.dlp.project): run `gcloud auth application-default login` or set "
            "GOOGLE_APPLICATION_CREDENTIALS"
        ) from exc
