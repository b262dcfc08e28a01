"""What makes a loopback request the local developer's, and not a browser's on their behalf.

A loopback TCP peer alone proves little: a page on any site can make the developer's browser
send requests to `127.0.0.1`, and a DNS-rebinding page can even make them same-origin to
itself. So the loopback policy and the dev routes also require:

- a `Host` header naming a loopback address (`localhost`, `127.0.0.1`, `[::1]`, any port)
  or the address the server was bound to (else `421 misdirected_request`): a rebinding
  page's requests carry its own host name;
- no `Origin`, or a loopback one (else `403 cross_origin`): browsers send `Origin` on every
  cross-site and every state-changing request;
- on state-changing methods, no body or content type other than `application/json` (else
  `415 unsupported_media_type`): a browser can send only form and plain-text bodies
  without a CORS preflight, and this server answers no preflight.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.requests import Request

from agentkit.errors import Forbidden, MisdirectedRequest, UnsupportedMediaType

LOOPBACK_NAMES = frozenset({"localhost"})
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _bare(host: str) -> str:
    return host.strip().strip("[]").lower().rstrip(".")


def is_loopback_name(host: str, extra: Iterable[str] = ()) -> bool:
    """`localhost`, a loopback address, or one of `extra` (without port or brackets)."""
    name = _bare(host)
    if not name:
        return False
    if name in LOOPBACK_NAMES or name in {_bare(h) for h in extra}:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str | None:
    """The host part of a `Host` header (`name`, `name:port`, `[v6]`, `[v6]:port`)."""
    try:
        parts = urlsplit("//" + header)
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError:
        return None
    if parts.username is not None or parts.path or parts.query:
        return None
    return parts.hostname


def loopback_host_header(header: str | None, bound: Iterable[str] = ()) -> bool:
    """Whether a `Host` header value names this machine: `localhost`, a loopback address
    (`127.0.0.1`, `[::1]`, with or without a port) or one of `bound`. An exact name match,
    never a prefix one (`127.0.0.1.attacker.example` is not loopback)."""
    name = _host_name(header) if header else None
    return name is not None and is_loopback_name(name, bound)


def host_ok(request: Request, bound: Iterable[str] = ()) -> bool:
    return loopback_host_header(request.headers.get("host"), bound)


def origin_ok(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:
        return True
    try:
        parts = urlsplit(origin)
        name = parts.hostname
        parts.port  # noqa: B018 (raises on a malformed port)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and name is not None and is_loopback_name(name)


def body_ok(request: Request) -> bool:
    if request.method.upper() not in STATE_CHANGING:
        return True
    ctype = request.headers.get("content-type")
    if ctype is None:
        # No declared type: only an empty body passes (nothing for a browser to smuggle).
        length = request.headers.get("content-length")
        chunked = "chunked" in request.headers.get("transfer-encoding", "").lower()
        return not chunked and (length is None or length.strip() == "0")
    media = ctype.split(";", 1)[0].strip().lower()
    return media == "application/json"


def is_local_request(request: Request, bound: Iterable[str] = ()) -> bool:
    """All three checks hold (a non-raising form, for granting extra rights)."""
    return host_ok(request, bound) and origin_ok(request) and body_ok(request)


def check_local_request(request: Request, bound: Iterable[str] = ()) -> None:
    """Raise the matching HTTP error unless the request is the local developer's own."""
    if not host_ok(request, bound):
        raise MisdirectedRequest(
            "the Host header must name this machine's loopback address "
            "(localhost, 127.0.0.1 or [::1]); serve with --bearer-token to be reached by name",
        )
    if not origin_ok(request):
        raise Forbidden(
            "cross-origin requests are refused: the Origin is not a loopback address",
            code="cross_origin",
        )
    if not body_ok(request):
        raise UnsupportedMediaType("send the request body as application/json")
