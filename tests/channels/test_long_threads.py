"""Channel sessions that live long: a Slack thread of hundreds of mentions and a pull request woken
by 50 pushes, each turn reading a 3 KB tool result on a 4,000-token window. Every turn
completes, in one session, because the conversation is compacted (the real app in
process, correctly signed deliveries, the Web API stand-ins on loopback)."""

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
from tests.channels.conftest import write
from tests.channels.github_payloads import delivery, pull_request
from tests.channels.github_standin import GitHubStandIn
from tests.channels.slack_payloads import envelope, event_request, mention
from tests.channels.slack_project import SECRET, TOKEN
from tests.channels.slack_standin import SlackStandIn

GITHUB_SECRET = "long-pr-secret"
LOOKUP = """
    from pydantic import BaseModel, Field
    from agentkit import define_tool

    class LookupInput(BaseModel):
        query: str = Field(description="What to look up")

    @define_tool(description="Look something up; returns a long report.")
    def lookup(input: LookupInput, ctx) -> str:
        return ("report on " + input.query + ": " + "lorem ipsum dolor sit amet " * 4) * 30
"""
AGENT = """
    from agentkit import define_agent

    agent = define_agent(model="test", max_steps=4, context_window=4000)
"""
SLACK = {
    "agent/agent.py": AGENT,
    "agent/instructions.md": "You are the helpdesk. Answer in the thread, briefly.\n",
    "agent/channels/slack.py": """
        from agentkit.channels.slack import slack_channel

        channel = slack_channel()
    """,
    "agent/tools/lookup.py": LOOKUP,
}
GITHUB = {
    "agent/agent.py": AGENT,
    "agent/instructions.md": "You review pull requests.\n",
    "agent/channels/github.py": f"""
        from agentkit.channels.github import github_channel

        channel = github_channel(secret="{GITHUB_SECRET}")
    """,
    "agent/tools/lookup.py": LOOKUP,
}


@pytest.fixture
async def host_for(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    """`make(files, kind)`: a host whose sessions live in the file store (`files`), or in
    DynamoDB on the moto server (`dynamodb`)."""
    started: list[LocalHost] = []

    async def make(files: dict[str, str], kind: str) -> tuple[LocalHost, httpx.AsyncClient]:
        project = write(tmp_path / "agent-project", files)
        store = None if kind == "files" else request.getfixturevalue("dynamodb_store_factory")()
        host = LocalHost(
            AgentBundle.discover(project), LocalHostOptions(tmp_path / "state"), store=store
        )
        await host.start()
        started.append(host)
        app = create_app([host.mount()], ServerOptions(mode="single"))
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
        return host, httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")

    yield make
    for host in started:
        await host.runtime.dispatcher.drain()  # type: ignore[attr-defined]
        await host.aclose()


async def drain(host: LocalHost) -> None:
    await host.runtime.dispatcher.drain()  # type: ignore[attr-defined]


def ends_and_compactions(events: list[Any]) -> tuple[list[str], int]:
    ends = [e.type for e in events if e.type in ("turn.completed", "turn.failed")]
    return ends, sum(1 for e in events if e.type == "context.compacted")


# After 300 turns the Slack pack's deliveries of the thread's events lag minutes behind
# the turns (the host drops what is still queued when it closes), so the default suite
# runs 60 mentions and the bench run (-m bench) the full 300. On DynamoDB (moto answers one
# request at a time, a few seconds a turn on a busy machine) the default suite runs 8 (one
# compaction at least), the bench run the full counts: 300 mentions, 50 pushes.
@pytest.mark.slow(reason="hundreds of Slack deliveries, each a turn, in one thread")
@pytest.mark.timeout(3600)
@pytest.mark.parametrize(
    ("kind", "mentions"),
    [
        ("files", 60),
        ("dynamodb", 8),
        pytest.param("files", 300, marks=pytest.mark.bench),
        pytest.param("dynamodb", 300, marks=pytest.mark.bench),
    ],
)
async def test_a_long_slack_thread_stays_in_one_session(
    slack_standin: SlackStandIn,
    monkeypatch: pytest.MonkeyPatch,
    host_for: Any,
    kind: str,
    mentions: int,
) -> None:
    # Fixtures are torn down in reverse order: the host closes first, while the stand-in
    # still answers and the Slack variables are still set, so deliveries that lag behind
    # the turns are dropped at close rather than retried against a server already gone.
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_API_URL", slack_standin.url)
    host, http = await host_for(SLACK, kind)
    root = "1700000100.000100"
    sessions: set[str] = set()
    async with http:
        for n in range(mentions):
            ts = root if n == 0 else f"1700000100.{n + 100:06d}"
            event = mention(f"lookup ticket {n}", ts, thread_ts=None if n == 0 else root)
            body, headers = event_request(envelope(event), SECRET)
            sent = await http.post("/v1/channels/slack/events", content=body, headers=headers)
            assert sent.status_code == 200, sent.text
            sessions.add(sent.json()["sessionId"])
            await drain(host)
    (sid,) = sessions
    ends, compactions = ends_and_compactions(list(await host.store.read(sid)))
    assert ends == ["turn.completed"] * mentions
    assert compactions >= mentions // 6
    replies = [p for p in slack_standin.posts() if p.args.get("thread_ts") == root]
    assert replies, "the agent never answered in the thread"


@pytest.mark.slow(reason="50 GitHub deliveries, each a turn, on one pull request")
@pytest.mark.timeout(1800)
@pytest.mark.parametrize(
    ("kind", "pushes"),
    [
        ("files", 50),
        ("dynamodb", 7),
        pytest.param("dynamodb", 50, marks=pytest.mark.bench),
    ],
)
async def test_a_pr_woken_by_50_pushes_stays_in_one_session(
    github_standin: GitHubStandIn,
    monkeypatch: pytest.MonkeyPatch,
    host_for: Any,
    kind: str,
    pushes: int,
) -> None:
    monkeypatch.setenv("GITHUB_API_URL", github_standin.url)
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_long_pr_token")
    host, http = await host_for(GITHUB, kind)
    sessions: set[str] = set()
    async with http:
        for n in range(pushes + 1):
            action = "opened" if n == 0 else "synchronize"
            payload = pull_request(action, 7, title="Faster widgets", head=f"{n:040x}")
            body, headers = delivery("pull_request", payload, GITHUB_SECRET)
            sent = await http.post("/v1/channels/github", content=body, headers=headers)
            assert sent.status_code in (200, 202), sent.text
            sessions.add(sent.json()["sessionId"])
            await drain(host)
    (sid,) = sessions
    ends, compactions = ends_and_compactions(list(await host.store.read(sid)))
    assert ends == ["turn.completed"] * (pushes + 1)
    assert compactions >= pushes // 5
