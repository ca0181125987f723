"""Small real HTTP servers on 127.0.0.1 for the tests of where veiltune's requests go: a
"proxy" that records every request it receives (and forwards none), and an
OpenAI-compatible judge that grades, or redirects elsewhere."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GRADES = "Privacy: 5\nCompleteness: 4"


class _Recorded(BaseHTTPRequestHandler):
    """Records each request's line, headers and body on its server; answers as the server's
    ``answer`` says."""

    server: _Server

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append(
            {"line": self.requestline, "headers": dict(self.headers), "body": body}
        )
        status, headers, payload = self.server.answer(self)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_CONNECT = _handle

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the tests read ``requests``."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answer: Any) -> None:
        super().__init__(("127.0.0.1", 0), _Recorded)
        self.requests: list[dict[str, Any]] = []
        self.answer = answer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def _running(answer: Any) -> Iterator[_Server]:
    server = _Server(answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def recording_proxy() -> Iterator[_Server]:
    """A proxy that forwards nothing: it records what reached it and answers 502."""
    with _running(lambda _handler: (502, {}, b"")) as proxy:
        yield proxy


def _grades(_handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    answer = {"choices": [{"message": {"role": "assistant", "content": GRADES}}]}
    return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode()


@contextmanager
def fake_judge(redirect_to: str | None = None) -> Iterator[_Server]:
    """An OpenAI-compatible judge at ``url + "/v1"`` that grades every summary
    ``GRADES``, or answers 302 to ``redirect_to`` when one is given."""
    if redirect_to is None:
        answer = _grades
    else:

        def answer(_handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
            return 302, {"Location": redirect_to}, b""

    with _running(answer) as judge:
        yield judge
