"""A budget approval answered with Slack's buttons: a thread's turn that would pass its
budget parks, the pack posts Approve / Deny, and the approver's click lets it finish (the
real app in process, the Web API stand-in on loopback)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.options import ServerOptions
from tests.channels.conftest import eventually, write
from tests.channels.slack_payloads import (
    block_action,
    envelope,
    event_request,
    interaction_request,
    mention,
)
from tests.channels.slack_project import APPROVER, SECRET, SLACK_FILES, TOKEN
from tests.channels.slack_standin import SlackStandIn

# A turn may spend 300 tokens. The offline model's first step here spends 213 and the next
# is estimated at as much again, so the turn parks before its second step; one approval
# doubles what it may spend, enough to finish.
FILES = {
    **SLACK_FILES,
    "agent/agent.py": (
        "from agentkit import define_agent\n\n"
        "agent = define_agent(model='test', budget={'turn_tokens': BUDGET})\n"
    ),
}


@pytest.fixture
def standin() -> Iterator[SlackStandIn]:
    server = SlackStandIn(status_ok=True).start()
    yield server
    server.stop()


@pytest.fixture
async def client(
    tmp_path: Path, standin: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[httpx.AsyncClient, LocalHost]]:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_API_URL", standin.url)
    monkeypatch.setenv("RESTART_LOG", str(tmp_path / "restarts.log"))
    files = {**FILES, "agent/agent.py": FILES["agent/agent.py"].replace("BUDGET", "300")}
    project = write(tmp_path / "helpdesk", files)
    host = LocalHost(AgentBundle.discover(project), LocalHostOptions(tmp_path / "state"))
    await host.start()
    app = create_app([host.mount()], ServerOptions(mode="single"))
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        yield http, host
    await host.runtime.dispatcher.drain()  # type: ignore[attr-defined]
    await host.aclose()


async def test_a_budget_approval_is_answered_with_the_buttons(client, standin) -> None:
    http, host = client
    ts = "1700000042.000100"
    body, headers = event_request(envelope(mention("what is the weather in Oslo", ts)), SECRET)
    sent = await http.post("/v1/channels/slack/events", content=body, headers=headers)
    sid = sent.json()["sessionId"]
    [ask] = await eventually(
        lambda: [p for p in standin.posts() if "blocks" in p.args], "the approval buttons"
    )
    assert ask.args["thread_ts"] == ts and "`budget`" in ask.args["text"]
    assert "budget exceeded" in json.dumps(ask.args["blocks"])  # the reason, shown to the approver
    buttons = {e["action_id"]: e["value"] for e in ask.args["blocks"][-1]["elements"]}
    call_id = json.loads(buttons["agentkit_approve"])["c"]
    assert call_id.startswith("budget_")
    action = block_action(
        "agentkit_approve",
        buttons["agentkit_approve"],
        user=APPROVER,
        message_ts="1800000000.000042",
        thread_ts=ts,
    )
    form, form_headers = interaction_request(action, SECRET)
    clicked = await http.post("/v1/channels/slack/interactions", content=form, headers=form_headers)
    assert clicked.json() == {"ok": True, "callId": call_id, "decision": "approve"}
    await host.runtime.dispatcher.drain()  # type: ignore[attr-defined]
    events = await host.store.read(sid)
    assert [e.type for e in events if e.type in ("turn.completed", "turn.failed")] == [
        "turn.completed"
    ]
    resolved = [e.data for e in events if e.type == "action.approval_resolved"]
    assert resolved == [{**resolved[0], "callId": call_id, "decision": "approve"}]
    # The answer reaches the thread once the approved turn has finished.
    replies = await eventually(
        lambda: [p for p in standin.posts() if "tempC" in p.args.get("text", "")], "the reply"
    )
    assert [r.args["thread_ts"] for r in replies] == [ts]
