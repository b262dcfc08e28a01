"""Fine-grained behaviour of the app in process (httpx ASGI transport over a real
LocalHost): auth policies, dev admins, body limits, layout checks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.auth import FORWARDING_HEADERS, AuthChain
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.sessions import Principal
from tests.fixtures.http_server import SLUG, write_agent

AppClient = Callable[..., httpx.AsyncClient]


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[LocalHost]:
    bundle = AgentBundle.discover(write_agent(tmp_path / SLUG))
    local = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state", dev=True))
    await local.start()
    yield local
    await local.aclose()


@pytest.fixture
def app_client(host: LocalHost) -> AppClient:
    def make(client_ip: str = "127.0.0.1", **options: object) -> httpx.AsyncClient:
        app = create_app([host.mount()], ServerOptions(**options))  # type: ignore[arg-type]
        transport = httpx.ASGITransport(app=app, client=(client_ip, 50000))
        return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")

    return make


async def test_local_dev_strict_admits_loopback(app_client: AppClient) -> None:
    async with app_client() as c:
        assert (await c.get(f"/{SLUG}/v1/sessions")).status_code == 200


async def test_local_dev_strict_refuses_a_remote_client(app_client: AppClient) -> None:
    async with app_client("203.0.113.7") as c:
        r = await c.get(f"/{SLUG}/v1/sessions")
    assert r.status_code == 401
    assert r.json() == {
        "ok": False,
        "error": "unauthorized",
        "message": "localDevStrict admits loopback clients only; serve with --bearer-token",
    }


@pytest.mark.parametrize("header", FORWARDING_HEADERS)
async def test_local_dev_strict_refuses_any_forwarding_header(
    app_client: AppClient, header: str
) -> None:
    async with app_client() as c:
        r = await c.get(f"/{SLUG}/v1/sessions", headers={header: "127.0.0.1"})
    assert r.status_code == 401


async def test_allow_anonymous_admits_remote_clients_as_anonymous(
    app_client: AppClient, host: LocalHost
) -> None:
    auth = AuthChain.from_flags(allow_anonymous=True)
    async with app_client("203.0.113.7", auth=auth) as c:
        sid = (await c.post(f"/{SLUG}/v1/session", json={"message": "hi"})).json()["sessionId"]
    record = await host.runtime.get_session(sid, principal=Principal("anonymous"))
    assert record.principal == "anonymous"


async def test_dev_admin_on_loopback_sees_every_session(
    app_client: AppClient, host: LocalHost
) -> None:
    other = await host.runtime.start_session("hello", principal=Principal("someone-else"))
    plain = AuthChain.from_flags()
    admin = AuthChain.from_flags(dev=True)
    async with app_client(auth=plain) as c:
        assert (await c.get(f"/{SLUG}/v1/session/{other.session_id}/events")).status_code == 403
        listed = (await c.get(f"/{SLUG}/v1/sessions")).json()["sessions"]
        assert other.session_id not in [s["sessionId"] for s in listed]
    async with app_client(auth=admin) as c:
        assert (await c.get(f"/{SLUG}/v1/session/{other.session_id}/events")).status_code == 200
        listed = (await c.get(f"/{SLUG}/v1/sessions")).json()["sessions"]
        assert other.session_id in [s["sessionId"] for s in listed]


async def test_dev_admin_needs_a_direct_loopback_caller(
    app_client: AppClient, host: LocalHost
) -> None:
    other = await host.runtime.start_session("hello", principal=Principal("someone-else"))
    auth = AuthChain.from_flags(allow_anonymous=True, dev=True)
    async with app_client("203.0.113.7", auth=auth) as c:
        r = await c.get(f"/{SLUG}/v1/session/{other.session_id}/events")
    assert r.status_code == 403


async def test_a_chunked_body_over_the_limit_is_413(app_client: AppClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"message": "'
        for _ in range(64):
            yield b"x" * 1024
        yield b'"}'

    async with app_client(max_body_bytes=16 * 1024) as c:
        r = await c.post(
            f"/{SLUG}/v1/session", content=chunks(), headers={"content-type": "application/json"}
        )
    assert r.status_code == 413
    assert r.json()["error"] == "payload_too_large"


async def test_single_mode_serves_the_agent_at_the_root(app_client: AppClient) -> None:
    async with app_client(mode="single") as c:
        assert (await c.get("/v1/meta")).json()["basePath"] == ""
        assert (await c.post("/v1/session", json={"message": "hi"})).status_code == 200
        assert (await c.get(f"/{SLUG}/v1/meta")).status_code == 404


def test_layout_mistakes_are_refused(host: LocalHost) -> None:
    mount = host.mount()
    twin = AgentMount(slug=mount.slug, service=mount.service)
    with pytest.raises(ValueError, match="share a slug"):
        create_app([mount, twin])
    with pytest.raises(ValueError, match="exactly one"):
        create_app([mount, AgentMount("other", mount.service)], ServerOptions(mode="single"))
    with pytest.raises(ValueError, match="collide"):
        create_app([AgentMount("docs", mount.service)])
    with pytest.raises(ValueError, match="at least one"):
        create_app([])


async def test_a_second_host_on_the_same_state_dir_is_refused(host: LocalHost) -> None:
    from agentkit.hosts.local import StateDirBusy

    again = LocalHost(host.bundle, host.options)
    with pytest.raises(StateDirBusy):
        await again.start()
