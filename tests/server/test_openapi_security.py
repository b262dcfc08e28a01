"""The OpenAPI document declares the bearer auth, on exactly the routes that authenticate."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.options import ServerOptions
from tests.fixtures.http_server import SLUG, write_agent

BEARER = [{"bearerAuth": []}]


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    bundle = AgentBundle.discover(write_agent(tmp_path / SLUG))
    host = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state", dev=True))
    await host.start()
    app = create_app([host.mount()], ServerOptions(dev=True))
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        yield c
    await host.aclose()


@pytest.fixture
async def document(client: httpx.AsyncClient) -> dict[str, Any]:
    r = await client.get("/v1/openapi.json")
    assert r.status_code == 200
    return dict(r.json())


def security_of(document: dict[str, Any], method: str, path: str) -> Any:
    return document["paths"][path][method].get("security")


def test_the_bearer_scheme_is_http_bearer(document: dict[str, Any]) -> None:
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", f"/{SLUG}/v1/session"),
        ("post", f"/{SLUG}/v1/session/{{session_id}}"),
        ("get", f"/{SLUG}/v1/session/{{session_id}}/stream"),
        ("get", f"/{SLUG}/v1/session/{{session_id}}/events"),
        ("post", f"/{SLUG}/v1/session/{{session_id}}/stop"),
        ("post", f"/{SLUG}/v1/session/{{session_id}}/fork"),
        ("get", f"/{SLUG}/v1/sessions"),
        ("get", f"/{SLUG}/v1/session/{{session_id}}/approvals"),
        ("post", f"/{SLUG}/v1/session/{{session_id}}/approvals/{{call_id}}"),
        ("post", f"/{SLUG}/v1/tools/{{tool_name}}"),
        ("get", f"/{SLUG}/v1/info"),
        ("get", f"/{SLUG}/v1/logs"),
        ("get", f"/{SLUG}/v1/dev/reminders"),
    ],
)
def test_authenticated_routes_require_the_bearer_scheme(
    document: dict[str, Any], method: str, path: str
) -> None:
    assert security_of(document, method, path) == BEARER
    assert "401" in document["paths"][path][method]["responses"]


@pytest.mark.parametrize(
    "path", ["/v1/health", f"/{SLUG}/v1/health", f"/{SLUG}/v1/meta", "/v1/agents"]
)
def test_open_routes_require_nothing(document: dict[str, Any], path: str) -> None:
    assert security_of(document, "get", path) is None


def test_no_security_is_declared_for_the_whole_document(document: dict[str, Any]) -> None:
    # A global requirement would also cover health, meta and the agent index.
    assert "security" not in document


@pytest.mark.parametrize("header", ["Basic dXNlcjpwdw==", "Bearer", "Bearer not-a-token", "x"])
async def test_the_declared_scheme_never_refuses_a_request_itself(
    client: httpx.AsyncClient, header: str
) -> None:
    # Loopback under localDevStrict: the auth chain admits; the scheme only documents.
    r = await client.get(f"/{SLUG}/v1/sessions", headers={"authorization": header})
    assert r.status_code == 200, r.text
