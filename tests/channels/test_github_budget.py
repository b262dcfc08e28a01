"""A budget approval answered from GitHub: a PR session that would pass its budget parks,
the pack asks on the PR, and an approver's `/approve` lets the turn finish (the real app in
process, the GitHub REST stand-in on loopback)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.options import ServerOptions
from tests.channels.conftest import eventually, write
from tests.channels.github_payloads import delivery, issue_comment, pull_request
from tests.channels.github_standin import GitHubStandIn

SECRET = "budget-secret"
HEAD = "c" * 40
FILES = {
    # A turn may spend 200 tokens. The offline model's first step here spends 128, and the
    # next is estimated at as much again, so the turn parks before its second step; one
    # approval doubles what it may spend, enough to finish.
    "agent/agent.py": (
        "from agentkit import define_agent\n\n"
        "agent = define_agent(model='test', budget={'turn_tokens': 200})\n"
    ),
    "agent/instructions.md": "You review pull requests.\n",
    "agent/tools/lint.py": """
        from pydantic import BaseModel
        from agentkit import define_tool


        class LintInput(BaseModel):
            path: str = "."


        @define_tool(description="Lint the pull request.")
        async def lint(input: LintInput, ctx) -> dict:
            return {"problems": 0}
    """,
    "agent/channels/github.py": """
        from agentkit.channels.github import github_channel

        channel = github_channel(secret="budget-secret", approvers=["octo-lead"])
    """,
}


@pytest.fixture
async def client(
    tmp_path: Path, github_standin: GitHubStandIn, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    monkeypatch.setenv("GITHUB_API_URL", github_standin.url)
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_budget_token")
    project = write(tmp_path / "reviewer", FILES)
    host = LocalHost(AgentBundle.discover(project), LocalHostOptions(tmp_path / "state"))
    await host.start()
    app = create_app([host.mount()], ServerOptions(mode="single"))
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http
    await host.runtime.dispatcher.drain()  # type: ignore[attr-defined]
    await host.aclose()


async def send(client: httpx.AsyncClient, event: str, payload: dict) -> httpx.Response:
    body, headers = delivery(event, payload, SECRET)
    return await client.post("/v1/channels/github", content=body, headers=headers)


async def test_a_budget_approval_is_answered_with_a_comment(client, github_standin) -> None:
    github_standin.heads["octo/widgets#12"] = HEAD
    opened = await send(client, "pull_request", pull_request("opened", 12, title="x", head=HEAD))
    assert opened.status_code == 200, opened.text
    ask = await eventually(
        lambda: [c for c in github_standin.comments(12) if "/approve" in c.body["body"]],
        "the budget question on the PR",
    )
    assert "budget exceeded" in ask[0].body["body"]
    call = re.search(r"/approve (\S+)`", ask[0].body["body"])
    assert call is not None and call[1].startswith("budget_")
    comment = issue_comment(12, f"/approve {call[1]}", login="octo-lead", association="MEMBER")
    answered = await send(client, "issue_comment", comment)
    assert answered.json() == {"ok": True, "callId": call[1], "decision": "approve"}
    replies = await eventually(
        lambda: [c for c in github_standin.comments(12) if "/approve" not in c.body["body"]],
        "the review reply after the approval",
    )
    assert len(replies) == 1 and "problems" in replies[0].body["body"]
