"""The A2A agent card at `/.well-known/agent-card.json`, read by the official `a2a-sdk`
resolver and client factory: made from the manifest, pointing at `/v1/a2a` under whatever
prefix the client reached the server by, with the bearer scheme only under bearer auth."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.auth import AuthChain
from agentkit.server.options import ServerOptions
from tests.fixtures.http_server import SLUG, Served, write_agent
from tests.protocols.conftest import ALICE


async def test_the_sdk_resolves_the_card_of_a_served_agent(shared_server: Served) -> None:
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, shared_server.url).get_agent_card()
        raw = (await http.get(f"{shared_server.url}/.well-known/agent-card.json")).json()
    assert card.name == SLUG
    assert card.description == "You are a helpful desk agent. Keep answers short."
    assert card.capabilities.streaming is True
    rpc = f"{shared_server.url}/v1/a2a"
    assert [(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces] == [
        (rpc, "JSONRPC", "1.0"),
        (rpc, "JSONRPC", "0.3"),
    ]
    tools = {s.name: list(s.tags) for s in card.skills}
    assert tools["get_weather"] == ["tool"]
    assert tools["wipe_notes"] == ["tool", "needs-approval"]
    # Loopback-only auth: no scheme to declare; the v0.3 fields stand beside the v1 ones.
    assert not card.security_schemes and "security" not in raw
    assert (raw["url"], raw["protocolVersion"]) == (rpc, "0.3.0")


async def test_a_bearer_server_declares_its_scheme_and_guards_its_card(
    bearer_server: Served,
) -> None:
    url = f"{bearer_server.url}/.well-known/agent-card.json"
    headers = {"authorization": f"Bearer {ALICE}"}
    async with httpx.AsyncClient(timeout=30, headers=headers) as http:
        card = await A2ACardResolver(http, bearer_server.url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
        await client.close()
    async with httpx.AsyncClient(timeout=30) as anonymous:
        refused = await anonymous.get(url)
    assert card.security_schemes["bearerAuth"].http_auth_security_scheme.scheme == "Bearer"
    assert list(card.security_requirements[0].schemes) == ["bearerAuth"]
    assert refused.status_code == 401


def test_the_scheme_follows_the_deployed_policy(tmp_path: Path) -> None:
    from agentkit.aws.auth import CachedTokens, GatewayPrincipal, SecretBearerAuth
    from agentkit.server.a2a_card import agent_card

    manifest = AgentBundle.discover(write_agent(tmp_path / SLUG)).manifest
    jwt = agent_card(manifest, AuthChain([GatewayPrincipal("jwt")]), "https://x/v1/a2a")
    iam = agent_card(manifest, AuthChain([GatewayPrincipal("iam")]), "https://x/v1/a2a")
    secret = AuthChain([SecretBearerAuth(CachedTokens(lambda: ["deployed-token"]))])
    deployed = agent_card(manifest, secret, "https://x/v1/a2a")
    assert jwt["securitySchemes"]["bearerAuth"]["httpAuthSecurityScheme"] == {
        "scheme": "Bearer",
        "bearerFormat": "JWT",
    }
    assert "securitySchemes" not in iam
    assert deployed["security"] == [{"bearerAuth": []}]


@pytest.fixture
async def staged(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The app behind a path prefix (an API Gateway stage), as Mangum hands it over."""
    host = LocalHost(
        AgentBundle.discover(write_agent(tmp_path / SLUG)),
        LocalHostOptions(state_root=tmp_path / "state"),
    )
    await host.start()
    app = create_app([host.mount()], ServerOptions(mode="single", auth=AuthChain.from_flags()))
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000), root_path="/prod")
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client
    await host.aclose()


async def test_the_card_url_keeps_the_stage_prefix(staged: httpx.AsyncClient) -> None:
    r = await staged.get("/prod/.well-known/agent-card.json")
    assert r.status_code == 200, r.text
    card = r.json()
    assert card["supportedInterfaces"][0]["url"] == "http://127.0.0.1/prod/v1/a2a"
    assert card["url"] == "http://127.0.0.1/prod/v1/a2a"
