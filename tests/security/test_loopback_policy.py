"""Item 2: the loopback default admits the local developer, not a browser page acting for
them (DNS rebinding, cross-site simple requests), over HTTP against `agentkit serve`."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from starlette.requests import Request

from agentkit.errors import MisdirectedRequest
from agentkit.server.auth import AuthChain
from tests.fixtures.http_server import Served, ServeFactory, serve_in
from tests.server.helpers import start_session

REBOUND = "rebind.attacker.example"


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # One server for the module: every test here either is refused (and checks that
    # nothing was recorded) or starts sessions of its own.
    served = serve_in(tmp_path_factory.mktemp("loopback"), "--dev")
    yield served
    served.stop()


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # The default policy (no flags), for the forwarded-request cases: each is refused.
    served = serve_in(tmp_path_factory.mktemp("loopback-plain"))
    yield served
    served.stop()


def _sessions(client: httpx.Client, served: Served) -> list[str]:
    r = client.get(f"{served.url}/v1/sessions")
    assert r.status_code == 200, r.text
    return [s["sessionId"] for s in r.json()["sessions"]]


def test_a_dns_rebinding_host_is_refused_on_every_route(dev_server: Served) -> None:
    host = {"host": f"{REBOUND}:{dev_server.port}"}
    with httpx.Client(timeout=30) as client:
        sid = start_session(client, dev_server.url, "hello")["sessionId"]
        attempts = [
            ("GET", "/v1/info", None),
            ("GET", "/v1/sessions", None),
            ("GET", f"/v1/session/{sid}/approvals", None),
            ("POST", "/v1/tools/get_weather", {"input": {"city": "Oslo"}}),
            ("POST", "/v1/session", {"message": "hi"}),
            ("POST", "/v1/dev/schedules/digest", None),
        ]
        for method, path, body in attempts:
            r = client.request(method, dev_server.url + path, json=body, headers=host)
            assert r.status_code == 421, (method, path, r.status_code, r.text)
            assert r.json()["ok"] is False
            assert r.json()["error"] == "misdirected_request"


def test_a_cross_site_simple_request_cannot_fire_a_schedule(dev_server: Served) -> None:
    with httpx.Client(timeout=30) as client:
        before = _sessions(client, dev_server)
        url = f"{dev_server.url}/v1/dev/schedules/digest"
        # What a page on another site can send with no preflight: text/plain, no body.
        cross = client.post(
            url, headers={"content-type": "text/plain", "origin": "https://evil.example"}
        )
        assert cross.status_code == 403, cross.text
        assert cross.json()["error"] == "cross_origin"
        # Even with no Origin (an old browser, a stripped header) the body type is refused.
        plain = client.post(url, headers={"content-type": "text/plain"})
        assert plain.status_code == 415, plain.text
        assert plain.json() == {
            "ok": False,
            "error": "unsupported_media_type",
            "message": "send the request body as application/json",
        }
        form = client.post(f"{dev_server.url}/v1/session", data={"message": "hi"})
        assert form.status_code == 415, form.text
        assert _sessions(client, dev_server) == before


def test_a_cross_origin_read_is_refused(dev_server: Served) -> None:
    with httpx.Client(timeout=30) as client:
        r = client.get(f"{dev_server.url}/v1/info", headers={"origin": "http://evil.example"})
        assert r.status_code == 403
        assert r.json()["error"] == "cross_origin"
        # `null` is the Origin of sandboxed frames and local files: not the developer's page.
        r = client.get(f"{dev_server.url}/v1/sessions", headers={"origin": "null"})
        assert r.status_code == 403


@pytest.mark.parametrize(
    "origin",
    [
        "http://localhost.attacker.example",
        "http://localhost.attacker.example:3000",
        "http://127.0.0.1.attacker.example",
        "http://localhostattacker.example",
        "http://attacker.example/localhost",
        "http://localhost@attacker.example",
    ],
)
def test_an_origin_that_only_starts_like_loopback_is_refused(
    dev_server: Served, origin: str
) -> None:
    # A page on a look-alike host name: a prefix or substring check would admit it.
    with httpx.Client(timeout=30) as client:
        before = _sessions(client, dev_server)
        read = client.get(f"{dev_server.url}/v1/info", headers={"origin": origin})
        assert read.status_code == 403, (origin, read.text)
        assert read.json()["error"] == "cross_origin"
        write = client.post(
            f"{dev_server.url}/v1/session", json={"message": "hi"}, headers={"origin": origin}
        )
        assert write.status_code == 403, (origin, write.text)
        assert _sessions(client, dev_server) == before


@pytest.mark.parametrize(
    "host", ["localhost.attacker.example", "127.0.0.1.nip.io", "localhost.attacker.example:80"]
)
def test_a_host_that_only_starts_like_loopback_is_misdirected(
    dev_server: Served, host: str
) -> None:
    with httpx.Client(timeout=30) as client:
        r = client.get(f"{dev_server.url}/v1/info", headers={"host": host})
        assert r.status_code == 421, (host, r.text)


def test_the_local_developer_and_same_origin_pages_still_work(dev_server: Served) -> None:
    port = dev_server.port
    with httpx.Client(timeout=30) as client:
        for host, origin in (
            (f"127.0.0.1:{port}", f"http://127.0.0.1:{port}"),
            (f"localhost:{port}", f"http://localhost:{port}"),
            ("localhost", None),
            (f"[::1]:{port}", f"http://[::1]:{port}"),
        ):
            headers = {"host": host, **({"origin": origin} if origin else {})}
            r = client.post(f"{dev_server.url}/v1/session", json={"message": "hi"}, headers=headers)
            assert r.status_code == 200, (host, r.text)
            assert client.get(f"{dev_server.url}/v1/info", headers=headers).status_code == 200
        # A body-less POST with no content type (curl -X POST) is not a browser's.
        fired = client.post(f"{dev_server.url}/v1/dev/schedules/digest")
        assert fired.status_code == 200, fired.text


def test_bearer_policy_is_not_bound_to_loopback_names(serve: ServeFactory) -> None:
    served = serve("--bearer-token", "tok-1")
    with httpx.Client(timeout=30) as client:
        r = client.get(
            f"{served.url}/v1/info",
            headers={"host": "agent.example.com", "authorization": "Bearer tok-1"},
        )
        assert r.status_code == 200, r.text


def _request(host: str) -> Request:
    """A request as uvicorn hands it over: a direct loopback peer with this Host header."""
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/v1/info",
        "headers": [(b"host", host.encode())],
        "client": ("127.0.0.1", 50000),
        "query_string": b"",
    }
    return Request(scope)


def test_the_bound_host_name_counts_as_local_and_nothing_else_does() -> None:
    # `serve --host devbox.internal`: the developer's own tools address it by that name.
    chain = AuthChain.from_flags(bound_host="devbox.internal")
    assert chain.authenticate(_request("devbox.internal:3000")).id == "local"
    assert chain.authenticate(_request("localhost:3000")).id == "local"
    with pytest.raises(MisdirectedRequest):
        chain.authenticate(_request("devbox.internal.attacker.example:3000"))
    # Without that flag the same name is just another site's.
    with pytest.raises(MisdirectedRequest):
        AuthChain.from_flags().authenticate(_request("devbox.internal:3000"))


@pytest.mark.parametrize(
    "header",
    [
        "X-Forwarded-Server",
        "X-Cluster-Client-IP",
        "Fastly-Client-IP",
        "X-ProxyUser-Ip",
        "Forwarded-For",
        "X-Forwarded",
    ],
)
def test_a_request_a_proxy_forwarded_is_not_the_local_developer(
    plain_server: Served, header: str
) -> None:
    served = plain_server
    r = httpx.get(f"{served.url}/v1/sessions", headers={header: "203.0.113.9"}, timeout=30)
    assert r.status_code == 401, (header, r.text)
    assert r.json()["ok"] is False
