"""A remote tracking server is checked before a stage uses it: one error, not minutes of
retries and a traceback. (Refused credentials: tests/team/test_stack.py, on a real server.)"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from components.core.errors import BackendError
from components.core.tracking_server import check_server, is_remote


class _OldServer(http.server.BaseHTTPRequestHandler):
    """Answers /version as an MLflow 2 server would."""

    def do_GET(self) -> None:  # http.server calls it by this name
        body = b"2.22.1" if self.path == "/version" else b"{}"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def old_server() -> Iterator[str]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _OldServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_an_unreachable_server_is_one_error_naming_it() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(
        BackendError, match=rf"127.0.0.1:{port} \(MLFLOW_TRACKING_URI\): unreachable"
    ):
        check_server(f"http://127.0.0.1:{port}")


def test_a_server_of_another_major_version_is_refused(old_server: str) -> None:
    with pytest.raises(BackendError, match=r"MLflow 2.22.1, and this client is 3\."):
        check_server(old_server)


def test_only_http_stores_are_remote() -> None:
    assert is_remote("https://mlflow.example.org") and is_remote("http://127.0.0.1:5000")
    assert not is_remote("sqlite:///mlflow.db") and not is_remote("file:///tmp/mlruns")
