"""The stream route through a plain TCP forwarder (`socat`, `ssh -R`): behind it every
outsider is a loopback peer, so only credentials decide, and a request whose credentials
depend on which `Authorization` header one reads is refused outright."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.fixtures.http_server import Served, serve_in
from tests.fixtures.tcp_forwarder import TcpForwarder, forwarder  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow(reason="starts agentkit serve behind a TCP forwarder")

ALICE, BOB = "alice-tunnel-token", "bob-tunnel-token"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("tunnel")
    tokens = base / "tokens.txt"
    tokens.write_text(f"{BOB}\n")
    server = serve_in(
        base, "--mode", "single", "--bearer-token", ALICE, "--tokens-file", str(tokens)
    )
    yield server
    server.stop()


@pytest.fixture
def tunnel(served: Served, forwarder: Callable[[int], TcpForwarder]) -> str:  # noqa: F811
    return forwarder(served.port).url


@pytest.fixture
def alices_session(tunnel: str) -> str:
    started = httpx.post(
        f"{tunnel}/v1/session", json={"message": "hello"}, headers=_bearer(ALICE), timeout=30
    )
    assert started.status_code == 200, started.text
    return str(started.json()["sessionId"])


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _stream(tunnel: str, sid: str, headers: list[tuple[str, str]]) -> httpx.Response:
    return httpx.get(
        f"{tunnel}/v1/session/{sid}/stream", params={"window": 1}, headers=headers, timeout=30
    )


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ([], 401),
        ([("authorization", "Bearer not-a-token")], 401),
        ([("x-forwarded-for", "203.0.113.9")], 401),
        ([("authorization", f"Bearer {BOB}")], 403),
    ],
    ids=["no token", "wrong token", "forwarded header", "another principal"],
)
def test_an_outsider_through_a_tunnel_cannot_read_a_stream(
    tunnel: str, alices_session: str, headers: list[tuple[str, str]], status: int
) -> None:
    refused = _stream(tunnel, alices_session, headers)
    assert refused.status_code == status
    assert refused.json()["ok"] is False
    assert "session.started" not in refused.text


@pytest.mark.parametrize(
    "tokens",
    [(ALICE, "not-a-token"), ("not-a-token", ALICE), (BOB, ALICE)],
    ids=["valid first", "valid second", "two principals"],
)
def test_two_authorization_headers_are_refused(
    tunnel: str, alices_session: str, tokens: tuple[str, str]
) -> None:
    # A front proxy that checks the last header and a server that reads the first would
    # disagree on who this is; neither reading is served.
    headers = [("authorization", f"Bearer {t}") for t in tokens]
    refused = _stream(tunnel, alices_session, headers)
    assert refused.status_code == 400
    assert refused.json() == {
        "ok": False,
        "error": "bad_request",
        "message": "more than one Authorization header",
    }
    started = httpx.post(
        f"{tunnel}/v1/session", json={"message": "hi"}, headers=headers, timeout=30
    )
    assert started.status_code == 400


def test_the_owner_reads_the_stream_through_the_tunnel(tunnel: str, alices_session: str) -> None:
    owned = _stream(tunnel, alices_session, [("authorization", f"Bearer {ALICE}")])
    assert owned.status_code == 200
    assert owned.text.splitlines()[0].startswith('{"type":"session.started"')
