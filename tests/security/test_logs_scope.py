"""Item 3: `GET /v1/logs` holds every principal's log lines, so only the local developer
reads it; a bearer principal reaching the server through a proxy cannot, over HTTP against
`agentkit serve`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, _env, write_agent

LOOKUP = """
    from pydantic import BaseModel
    from agentkit import define_tool


    class LookupInput(BaseModel):
        email: str = "alice@example.com"


    @define_tool(description="Look a customer up.")
    def lookup(input: LookupInput, ctx) -> dict:
        ctx.logger.info("looked up customer %s", input.email)
        return {"found": True}
"""
ALICE, MALLORY, ADMIN = "tok-alice", "tok-mallory", "tok-admin"
SECRET_EMAIL = "carol.customer@example.com"
# What a reverse proxy or tunnel in front of the server adds to every request it forwards.
PROXIED = {"x-forwarded-for": "203.0.113.9"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    project = write_agent(tmp_path / SLUG, {**AGENT_FILES, "agent/tools/lookup.py": LOOKUP})
    args = ["--bearer-token", ALICE, "--bearer-token", MALLORY, "--admin-token", ADMIN]
    server = Served(project, tmp_path / "state", args, _env({})).start()
    yield server
    server.stop()


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", **PROXIED}


def test_another_principal_cannot_read_a_customers_log_lines(served: Served) -> None:
    with httpx.Client(timeout=60) as client:
        r = client.post(
            f"{served.url}/v1/tools/lookup",
            json={"input": {"email": SECRET_EMAIL}},
            headers=_bearer(ALICE),
        )
        assert r.status_code == 200, r.text
        stolen = client.get(f"{served.url}/v1/logs", headers=_bearer(MALLORY))
        assert SECRET_EMAIL not in stolen.text
        assert stolen.status_code == 403, stolen.text
        assert stolen.json()["error"] == "logs_local_only"
        # Alice herself, from outside, is refused too: lines are not tagged per principal.
        assert client.get(f"{served.url}/v1/logs", headers=_bearer(ALICE)).status_code == 403
        # Nor on loopback: a token names its principal wherever it comes from (a tunnel that
        # adds no header looks exactly like loopback).
        local = client.get(f"{served.url}/v1/logs", headers={"authorization": f"Bearer {ALICE}"})
        assert local.status_code == 403, local.text
        # The admin token reads them, from anywhere.
        admin = client.get(f"{served.url}/v1/logs", headers=_bearer(ADMIN))
        assert admin.status_code == 200, admin.text
        assert any(SECRET_EMAIL in line["message"] for line in admin.json()["lines"])
