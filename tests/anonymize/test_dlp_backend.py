"""The Google Cloud DLP backend, through the real client, against a local DLP server that
applies the request's own rules (tests/dlp_fake_server.py)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest

from components.anonymize.config import AnonymizeConfig, DlpConfig
from components.anonymize.dlp_backend import (
    MAX_FINDINGS,
    Backoff,
    GoogleDlpDetector,
    LayeredDetector,
    byte_to_char,
    dlp_client,
)
from components.anonymize.dlp_rules import dlp_rules
from components.anonymize.spans import Span, text_windows
from components.core.config import stage_config
from components.core.errors import BackendError, ParamsError
from tests.dlp_fake_server import FakeDlpServer, Fault
from tests.local_servers import recording_proxy

REPO = Path(__file__).resolve().parents[2]
INFO_TYPES = [
    "PERSON_NAME",
    "ORGANIZATION_NAME",
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD_NUMBER",
    "USER_NAME",
    "GENERIC_ID",
]


@pytest.fixture
def server() -> Iterator[FakeDlpServer]:
    with FakeDlpServer() as running:
        yield running


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    """Exclusion lists and dictionaries in a folder of their own."""
    files = {
        "exclusions/email.txt": "# shared mailbox\nhelp@example.com\n",
        "exclusions/person.txt": "Support\n",
        "dictionaries/person.txt": "Zorbatron\nSupport\n",
        "dictionaries/organization.txt": "Acme Widgets\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def config_for(server: FakeDlpServer, **dlp: Any) -> AnonymizeConfig:
    settings = DlpConfig(project="veiltune-test", endpoint=server.endpoint, insecure=True)
    return AnonymizeConfig(
        backend="google_dlp",
        info_types=INFO_TYPES,
        calibration=None,
        exclusions={
            "EMAIL_ADDRESS": "exclusions/email.txt",
            "PERSON_NAME": "exclusions/person.txt",
        },
        dictionaries={
            "PERSON_NAME": "dictionaries/person.txt",
            "ORGANIZATION_NAME": "dictionaries/organization.txt",
        },
        pi_label_keys=None,
        dlp=replace(settings, **dlp),
    )


def detector_for(
    server: FakeDlpServer, policy: Path, *, sleeps: list[float] | None = None, **dlp: Any
) -> GoogleDlpDetector:
    config = config_for(server, **dlp)
    backoff = Backoff(sleep=(sleeps if sleeps is not None else []).append)
    rules = dlp_rules(config, policy, max_findings=MAX_FINDINGS)
    return GoogleDlpDetector(dlp_client(config.dlp), rules, config.dlp, backoff)


def found(text: str, spans: list[Span]) -> list[tuple[str, str]]:
    return [(text[s.start : s.end], s.entity_type) for s in spans]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the dictionary's word, any case, reported under its info type
        ("Ask ZORBATRON about it", [("ZORBATRON", "PERSON_NAME")]),
        ("We buy from Acme Widgets.", [("Acme Widgets", "ORGANIZATION_NAME")]),
        # an excluded word is never reported, though the dictionary lists it too
        ("Call Support now", []),
        # the e-mail exclusion holds for its whole text only
        (
            "Write help@example.com or jo@example.com",
            [("jo@example.com", "EMAIL_ADDRESS")],
        ),
        # a username near a hotword is found; the same handle far from one is not
        ("my username is jthomas42 ok", [("jthomas42", "USER_NAME")]),
        ("username: " + "x " * 60 + "jthomas42", []),
        ("I like jthomas42", []),
        # transcript patterns: spelled letters, digit runs of 3 or more
        ("that is A-L-P-H-A", [("A-L-P-H-A", "PERSON_NAME")]),
        ("code 4 4 1 2 please", [("4 4 1 2", "GENERIC_ID")]),
        ("it is 12 now", []),
        # built-ins: a card number passes Luhn or is no card number
        ("card 4111 1111 1111 1111", [("4111 1111 1111 1111", "CREDIT_CARD_NUMBER")]),
        ("card 4111 1111 1111 1112", [("4111 1111 1111 1112", "GENERIC_ID")]),
    ],
)
def test_policy_becomes_dlp_rules(
    server: FakeDlpServer, policy: Path, *, text: str, expected: list[tuple[str, str]]
) -> None:
    (spans,) = detector_for(server, policy).detect([text])
    assert found(text, spans) == expected


def test_offsets_are_python_offsets_with_emoji_and_non_latin_text(
    server: FakeDlpServer, policy: Path
) -> None:
    texts = ["😀🎉 Zorbatron 写信给 jo@example.com", "Ελένη και Zorbatron 🇬🇷", "plain"]
    spans = detector_for(server, policy).detect(texts)
    assert [found(t, s) for t, s in zip(texts, spans, strict=True)] == [
        [("Zorbatron", "PERSON_NAME"), ("jo@example.com", "EMAIL_ADDRESS")],
        [("Zorbatron", "PERSON_NAME")],
        [],
    ]


def test_byte_ranges_map_to_code_points() -> None:
    text = "😀 é 写 x"
    data = text.encode("utf-8")
    assert [byte_to_char(data, data.index(c.encode())) for c in "😀é写x"] == [0, 2, 4, 6]
    assert byte_to_char(data, len(data)) == len(text)


def test_byte_ranges_alone_give_the_same_spans(server: FakeDlpServer, policy: Path) -> None:
    texts = ["😀🎉 Zorbatron 写信给 jo@example.com"]
    detector = detector_for(server, policy)
    expected = detector.detect(texts)
    real = detector.client

    class ByteRangesOnly:
        def inspect_content(self, request: Any, *, retry: Any, timeout: float) -> Any:
            response = real.inspect_content(request=request, retry=retry, timeout=timeout)
            for finding in response.result.findings:
                finding.location.codepoint_range = None
            return response

    assert replace(detector, client=ByteRangesOnly()).detect(texts) == expected


def test_request_asks_for_offsets_only_with_the_params_floor(
    server: FakeDlpServer, policy: Path
) -> None:
    detector_for(server, policy, min_likelihood="LIKELY").detect(["code 4 4 1 2"])
    (request,) = server.dlp.requests
    config = request.inspect_config
    assert not config.include_quote
    assert config.min_likelihood == 4  # LIKELY
    assert request.parent == "projects/veiltune-test/locations/global"
    assert [t.name for t in config.info_types] == INFO_TYPES


def test_likelihood_floor_drops_weaker_findings(server: FakeDlpServer, policy: Path) -> None:
    detector = detector_for(server, policy, min_likelihood="LIKELY")
    (spans,) = detector.detect(["code 4 4 1 2, Zorbatron"])  # a digit run is only POSSIBLE
    assert found("code 4 4 1 2, Zorbatron", spans) == [("Zorbatron", "PERSON_NAME")]


def test_texts_are_batched_in_rows_and_mapped_back(server: FakeDlpServer, policy: Path) -> None:
    texts = ["Zorbatron", "", "jo@example.com", "nothing here"]
    detector = detector_for(server, policy)
    spans = detector.detect(texts)
    assert [found(t, s) for t, s in zip(texts, spans, strict=True)] == [
        [("Zorbatron", "PERSON_NAME")],
        [],
        [("jo@example.com", "EMAIL_ADDRESS")],
        [],
    ]
    assert len(server.dlp.requests) == 1  # the empty text is not sent
    assert len(server.dlp.requests[0].item.table.rows) == 3
    assert detector.usage_metrics()["dlp_bytes_inspected"] == len("".join(texts))


def test_requests_stay_under_the_size_limit(server: FakeDlpServer, policy: Path) -> None:
    texts = ["x " * 100_000 + "Zorbatron"] * 3  # 200 kB each: two fit in one request
    spans = detector_for(server, policy).detect(texts)
    assert [len(r.item.table.rows) for r in server.dlp.requests] == [2, 1]
    assert all(
        found(t, s) == [("Zorbatron", "PERSON_NAME")] for t, s in zip(texts, spans, strict=True)
    )


def test_a_text_past_the_request_limit_goes_in_overlapping_pieces(
    server: FakeDlpServer, policy: Path
) -> None:
    filler = "wörd 😀 " * 30_000  # 330 kB
    text = f"Zorbatron {filler}username zorb_77 {filler}{filler}jo@example.com"
    (spans,) = detector_for(server, policy).detect([text])
    assert found(text, spans) == [
        ("Zorbatron", "PERSON_NAME"),
        ("zorb_77", "USER_NAME"),
        ("jo@example.com", "EMAIL_ADDRESS"),
    ]
    assert len(server.dlp.requests) >= 3


def test_pieces_cover_the_text_and_overlap() -> None:
    text = " ".join(f"w{i}" for i in range(2_000))
    pieces = text_windows(text, 1_000, overlap=300)
    assert pieces[0][0] == 0 and pieces[-1][1] == len(text)
    for (_, end), (start, _) in itertools.pairwise(pieces):
        assert end - start >= 300 and text[start - 1] == " "


def test_truncated_findings_are_asked_again_in_halves(server: FakeDlpServer, policy: Path) -> None:
    texts = [" ".join(f"u{i}@example.com" for i in range(1_600))] * 2  # 3,200 > 3,000
    spans = detector_for(server, policy).detect(texts)
    assert [len(s) for s in spans] == [1_600, 1_600]
    assert [len(r.item.table.rows) for r in server.dlp.requests] == [2, 1, 1]


def test_unavailable_twice_is_retried_with_the_same_result(
    server: FakeDlpServer, policy: Path
) -> None:
    texts = ["Zorbatron at jo@example.com", "card 4111 1111 1111 1111"]
    expected = detector_for(server, policy).detect(texts)
    server.dlp.faults = [Fault(grpc.StatusCode.UNAVAILABLE)] * 2
    sleeps: list[float] = []
    detector = detector_for(server, policy, sleeps=sleeps)
    assert detector.detect(texts) == expected
    assert sleeps == [1.0, 2.0]
    assert detector.usage_metrics()["dlp_requests"] == 3
    assert detector.usage_metrics()["dlp_retries"] == 2


def test_resource_exhausted_past_the_budget_is_one_clear_error(
    server: FakeDlpServer, policy: Path
) -> None:
    server.dlp.faults = [Fault(grpc.StatusCode.RESOURCE_EXHAUSTED)] * 10
    sleeps: list[float] = []
    with pytest.raises(BackendError, match=r"RESOURCE_EXHAUSTED after 3 attempts") as error:
        detector_for(server, policy, sleeps=sleeps, max_attempts=3).detect(["Zorbatron"])
    assert "veiltune-test" in str(error.value) and "anonymize.dlp.max_attempts" in str(error.value)
    assert sleeps == [1.0, 2.0]
    server.dlp.faults = [Fault(grpc.StatusCode.RESOURCE_EXHAUSTED)] * 10
    with pytest.raises(BackendError, match="anonymize.dlp.retry_seconds"):
        detector_for(server, policy, sleeps=[], retry_seconds=2.5).detect(["Zorbatron"])


@pytest.mark.parametrize(
    ("code", "names"),
    [
        (grpc.StatusCode.PERMISSION_DENIED, "roles/dlp.user"),
        (grpc.StatusCode.INVALID_ARGUMENT, "anonymize.info_types"),
    ],
)
def test_refusals_name_the_project_and_the_setting(
    server: FakeDlpServer, policy: Path, *, code: grpc.StatusCode, names: str
) -> None:
    server.dlp.faults = [Fault(code)]
    with pytest.raises(BackendError, match="anonymize.dlp.project") as error:
        detector_for(server, policy).detect(["Zorbatron"])
    assert "'veiltune-test'" in str(error.value) and names in str(error.value)
    assert len(server.dlp.requests) == 1  # a refusal is not retried


def test_findings_out_of_order_and_overlapping(server: FakeDlpServer, policy: Path) -> None:
    texts = ["Zorbatron wrote to jo@example.com and Acme Widgets"]
    expected = detector_for(server, policy).detect(texts)
    server.dlp.faults = [Fault(shuffle=True)]
    assert detector_for(server, policy).detect(texts) == expected


def test_an_answer_past_the_deadline_fails_cleanly(server: FakeDlpServer, policy: Path) -> None:
    server.dlp.faults = [Fault(delay=1.0)]
    with pytest.raises(BackendError, match="DEADLINE_EXCEEDED after 1 attempts"):
        detector_for(server, policy, timeout=0.2, max_attempts=1).detect(["Zorbatron"])


class GreekNames:
    """A second layer (google_dlp+presidio layers Presidio's detector the same way)."""

    def detect(self, texts: list[str], batch_size: int = 64) -> list[list[Span]]:
        return [
            [Span(t.index("Ελένη"), t.index("Ελένη") + 5, "PERSON_NAME", 0.8)]
            if "Ελένη" in t
            else []
            for t in texts
        ]


def test_layers_add_to_dlp_findings(server: FakeDlpServer, policy: Path) -> None:
    texts = ["Ελένη και Zorbatron 🇬🇷", "jo@example.com"]
    layered = LayeredDetector([detector_for(server, policy), GreekNames()])
    spans = layered.detect(texts)
    assert [found(t, s) for t, s in zip(texts, spans, strict=True)] == [
        [("Ελένη", "PERSON_NAME"), ("Zorbatron", "PERSON_NAME")],
        [("jo@example.com", "EMAIL_ADDRESS")],
    ]
    assert layered.usage_metrics()["dlp_requests"] == 1


@pytest.mark.slow  # loads the spaCy pipeline (about 12 s on a slow core)
def test_google_dlp_plus_presidio_adds_the_transcript_recognizers(server: FakeDlpServer) -> None:
    from components.anonymize.factory import build_detector

    settings = DlpConfig(project="veiltune-test", endpoint=server.endpoint, insecure=True)
    detector = build_detector(AnonymizeConfig(backend="google_dlp+presidio", dlp=settings), REPO)
    text = "my number is five five five one two one two, mail jo@example.com"
    (spans,) = detector.detect([text])
    assert found(text, spans) == [
        ("five five five one two one two", "GENERIC_ID"),  # DLP has no spoken digits
        ("jo@example.com", "EMAIL_ADDRESS"),
    ]
    assert len(server.dlp.requests) == 1


def test_params_validation_names_the_key() -> None:
    with pytest.raises(ParamsError, match="anonymize.dlp.insecure"):
        DlpConfig(project="p", endpoint="dlp.example.com:443", insecure=True)
    with pytest.raises(ParamsError, match="anonymize.dlp.insecure"):
        DlpConfig(project="p", insecure=True)  # Google's own endpoint is never plaintext
    with pytest.raises(ParamsError, match="anonymize.dlp.project"):
        AnonymizeConfig(backend="google_dlp")
    with pytest.raises(ParamsError, match="anonymize.dlp.min_likelihood"):
        DlpConfig(min_likelihood="SURE")  # type: ignore[arg-type]
    with pytest.raises(ParamsError, match="anonymize.dlp.endpoint"):
        DlpConfig(endpoint="localhost")
    with pytest.raises(ParamsError, match="anonymize.dlp.colour"):
        stage_config({"anonymize": {"dlp": {"colour": 1}}}, "anonymize", cls=AnonymizeConfig)
    with pytest.raises(ParamsError, match="anonymize.backend"):
        AnonymizeConfig(backend="dlp")  # type: ignore[arg-type]
    assert DlpConfig(project="p", endpoint="localhost:8080", insecure=True).insecure


def proxied_environment(monkeypatch: pytest.MonkeyPatch, proxy: str) -> None:
    """Every proxy variable gRPC reads set to ``proxy``, no exception for any host."""
    for name in ("grpc_proxy", "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(name, proxy)
    for name in ("no_grpc_proxy", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)


def test_a_local_dlp_server_is_reached_directly_whatever_the_environment_says(
    server: FakeDlpServer, policy: Path, *, monkeypatch: pytest.MonkeyPatch
) -> None:
    with recording_proxy() as proxy:
        proxied_environment(monkeypatch, proxy.url)
        (spans,) = detector_for(server, policy, max_attempts=1).detect(["Ask Zorbatron"])
    assert proxy.requests == []  # plaintext raw text never tunnelled through a proxy
    assert found("Ask Zorbatron", spans) == [("Zorbatron", "PERSON_NAME")]
    assert len(server.dlp.requests) == 1


def test_a_remote_dlp_endpoint_goes_through_the_proxy_the_params_name_only(
    policy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import google.auth
    from google.auth.credentials import AnonymousCredentials

    monkeypatch.setattr(google.auth, "default", lambda **_: (AnonymousCredentials(), None))
    remote = DlpConfig(project="veiltune-test", endpoint="dlp.example.test:443", timeout=5.0)
    config = AnonymizeConfig(
        backend="google_dlp",
        info_types=INFO_TYPES,
        calibration=None,
        exclusions={},
        dictionaries={},
        dlp=DlpConfig(project="veiltune-test"),
    )
    rules = dlp_rules(config, policy, max_findings=MAX_FINDINGS)
    with recording_proxy() as named, recording_proxy() as environment:
        proxied_environment(monkeypatch, environment.url)
        for settings in (replace(remote, proxy=named.url), remote):
            client = dlp_client(settings)
            detector = GoogleDlpDetector(client, rules, replace(settings, max_attempts=1))
            with pytest.raises(BackendError, match="UNAVAILABLE"):  # no Cloud DLP here
                detector.detect(["Ask Zorbatron"])
    assert [r["line"] for r in named.requests] == ["CONNECT dlp.example.test:443 HTTP/1.1"]
    assert environment.requests == []


def test_a_dlp_proxy_is_for_a_remote_endpoint_and_is_a_url() -> None:
    with pytest.raises(ParamsError, match="anonymize.dlp.proxy.*loopback"):
        DlpConfig(project="p", endpoint="127.0.0.1:8080", insecure=True, proxy="http://p:3128")
    with pytest.raises(ParamsError, match="anonymize.dlp.proxy.*http://HOST:PORT"):
        DlpConfig(project="p", proxy="p:3128")
    assert DlpConfig(project="p", proxy="http://p:3128").proxy == "http://p:3128"


def test_missing_credentials_are_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "absent.json"))
    with pytest.raises(BackendError, match="GOOGLE_APPLICATION_CREDENTIALS"):
        dlp_client(DlpConfig(project="veiltune-test"))


def test_presidio_backend_imports_nothing_of_dlp() -> None:
    probe = (
        "import sys\n"
        "from components.anonymize import factory, stage\n"
        "from components.anonymize.config import AnonymizeConfig\n"
        "AnonymizeConfig()\n"
        "assert not [m for m in sys.modules if m.startswith(('google.cloud', 'grpc'))]\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=REPO, check=True)


def test_anonymize_stage_with_google_dlp(server: FakeDlpServer, policy: Path) -> None:
    from components.anonymize.stage import anonymize_file

    raw = policy / "corpus.jsonl"
    records: list[dict[str, Any]] = [
        {
            "id": "c1",
            "context": "unknown",
            "turns": [
                {"speaker": "agent", "text": "Hello, what is your username?"},
                {"speaker": "customer", "text": "My username is zorb_77, mail jo@example.com 😀"},
            ],
        },
        {"id": "c2", "text": "Zorbatron paid with 4111 1111 1111 1111."},
    ]
    raw.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    out, spans = policy / "anonymized.jsonl", policy / "spans.jsonl"
    metrics = anonymize_file(
        config_for(server, price_per_gb=2.0),
        policy,
        input_path=raw,
        output_path=out,
        spans_path=spans,
    )
    anonymized = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    turn = anonymized[0]["turns"][1]["text"]
    assert "zorb_77" not in turn and "jo@example.com" not in turn and turn.endswith("😀")
    assert "Zorbatron" not in anonymized[1]["text"] and "4111" not in anonymized[1]["text"]
    types = sorted(json.loads(line)["entity_type"] for line in spans.read_text().splitlines())
    assert types == ["CREDIT_CARD_NUMBER", "EMAIL_ADDRESS", "PERSON_NAME", "USER_NAME"]
    assert metrics["dlp_requests"] == 1
    inspected = metrics["dlp_bytes_inspected"]
    sent = [records[1]["text"], *(t["text"] for t in records[0]["turns"])]
    assert inspected == sum(len(text.encode()) for text in sent)
    assert metrics["dlp_estimated_cost_usd"] == round(inspected / 1e9 * 2.0, 6)


def test_a_failing_service_writes_nothing(server: FakeDlpServer, policy: Path) -> None:
    from components.anonymize.stage import anonymize_file

    raw = policy / "corpus.jsonl"
    raw.write_text(json.dumps({"id": "c1", "text": "Zorbatron"}) + "\n", "utf-8")
    out, spans = policy / "anonymized.jsonl", policy / "spans.jsonl"
    server.dlp.faults = [Fault(grpc.StatusCode.RESOURCE_EXHAUSTED)] * 3
    config = config_for(server, max_attempts=3, retry_seconds=0.0)
    with pytest.raises(BackendError, match="nothing was written"):
        anonymize_file(config, policy, input_path=raw, output_path=out, spans_path=spans)
    assert not out.exists() and not spans.exists()
