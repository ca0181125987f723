"""Where veiltune's own requests to a service (the LLM judge, Cloud DLP) may go.

What they carry is private (a judge's prompt holds facts of raw calls, a DLP request raw
text), so the route is decided here, never by the environment: a loopback target is reached
directly, never through a proxy (``http_proxy`` and the like are ignored, ``no_proxy`` or
not); a remote target goes through a proxy only when its params name one; an HTTP request
never follows a redirect, which would hand the request, and its key, to another host.
"""

from __future__ import annotations

import ipaddress
import urllib.request
from collections.abc import Sequence
from email.message import Message
from typing import IO, NoReturn
from urllib.parse import urlparse

from components.core.config import require
from components.core.errors import BackendError

# gRPC's channel arguments: no proxy at all, or this one (either way the environment's
# grpc_proxy, https_proxy and http_proxy are not read).
GRPC_NO_PROXY = ("grpc.enable_http_proxy", 0)
GRPC_PROXY = "grpc.http_proxy"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name, an address, ``[::1]``) is this machine's loopback."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_proxy(proxy: str | None, target_host: str | None, *, key: str) -> None:
    """A proxy param: null, or an ``http(s)://HOST:PORT`` URL for a remote target.

    Args:
        target_host: the host the proxy would carry requests to; None when the params name
            no URL (a proxy is then meaningless).
        key: the param's dotted name, for the error.
    """
    if proxy is None:
        return
    require(
        target_host is not None, key, allowed="null unless the params name a judge URL or endpoint"
    )
    require(
        not is_loopback(target_host or ""),
        key,
        allowed=(
            f"null for a loopback target ({target_host}): loopback is never reached through a proxy"
        ),
    )
    parsed = urlparse(proxy)
    require(
        parsed.scheme in ("http", "https") and bool(parsed.hostname) and parsed.port is not None,
        key,
        allowed="null or a proxy URL http://HOST:PORT",
    )


def url_opener(url: str, proxy: str | None) -> urllib.request.OpenerDirector:
    """An opener for requests to ``url``: through ``proxy`` only when ``url`` is remote and
    a proxy is named, never one from the environment; redirects refused."""
    host = urlparse(url).hostname or ""
    routes = {} if proxy is None or is_loopback(host) else {"http": proxy, "https": proxy}
    return urllib.request.build_opener(urllib.request.ProxyHandler(routes), _NoRedirects())


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Refuses every redirect: the target answered for another URL, which is not the one
    the params (and the loopback and consent checks) named."""

    def redirect_request(  # noqa: PLR0917 (urllib's signature)
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Message,
        newurl: str,
    ) -> NoReturn:
        raise BackendError(
            f"{req.full_url} answered {code} to {newurl}: veiltune follows no redirect "
            "(the request would go to a host the params did not name); name the final URL"
        )


def grpc_proxy_options(host: str, proxy: str | None) -> Sequence[tuple[str, str | int]]:
    """gRPC channel arguments for a channel to ``host``: ``proxy`` for a remote host when
    one is named, otherwise no proxy at all (the environment's are ignored)."""
    if proxy is None or is_loopback(host):
        return [GRPC_NO_PROXY]
    return [(GRPC_PROXY, proxy)]
