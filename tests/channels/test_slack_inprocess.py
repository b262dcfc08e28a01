"""The Slack pack in the real app, in process (so the dispatcher can fail once and the
store be read directly), against the Web API stand-in on loopback: a retry of an event whose
turn could not start runs it, and a budget question is answered with the buttons."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.options import ServerOptions
from tests.channels.conftest import eventually, fail_next_dispatch, write
from tests.channels.slack_payloads import (
    block_action,
    envelope,
    event_request,
    interaction_request,
    mention,
)
from tests.channels.slack_project import APPROVER, SECRET, SLACK_FILES, TOKEN
from tests.channels.slack_standin import SlackStandIn


@pytest.fixture
async def make_host(
    tmp_path: Path, slack_standin: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Callable[[dict[str, str]], Awaitable[LocalHost]]]:
    """`await make_host(files)`: a started host of the helpdesk project with `files`."""
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_API_URL", slack_standin.url)
    monkeypatch.setenv("RESTART_LOG", str(tmp_path / "restarts.log"))
    started: list[LocalHost] = []

    async def make(files: dict[str, str]) -> LocalHost:
        project = write(tmp_path / "helpdesk", files)
        host = LocalHost(AgentBundle.discover(project), LocalHostOptions(tmp_path / "state"))
        await host.start()
        started.append(host)
        return host

    yield make
    for host in started:
        await host.runtime.dispatcher.drain()  # type: ignore[attr-defined]
        await host.aclose()


def app_client(host: LocalHost, *, raise_app_exceptions: bool = True) -> httpx.AsyncClient:
    """A client of the app serving `host`, calling as the local developer."""
    app = create_app([host.mount()], ServerOptions(mode="single"))
    transport = httpx.ASGITransport(
        app=app, client=("127.0.0.1", 5000), raise_app_exceptions=raise_app_exceptions
    )
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")


async def test_a_retry_of_an_event_whose_turn_could_not_start_runs_it(make_host) -> None:
    host = await make_host(SLACK_FILES)
    dispatcher = fail_next_dispatch(host)
    payload = envelope(mention("what is the weather in Oslo", "1700000009.000100"))
    async with app_client(host, raise_app_exceptions=False) as client:
        body, headers = event_request(payload, SECRET)
        first = await client.post("/v1/channels/slack/events", content=body, headers=headers)
        body, headers = event_request(payload, SECRET, retry=1)
        retried = await client.post("/v1/channels/slack/events", content=body, headers=headers)
        body, headers = event_request(payload, SECRET, retry=2)
        again = await client.post("/v1/channels/slack/events", content=body, headers=headers)
    assert first.status_code == 500 and first.json()["ok"] is False
    assert retried.status_code == 200 and "duplicate" not in retried.json(), retried.text
    assert again.json() == {"ok": True, "duplicate": True}
    await dispatcher.drain()
    events = await host.store.read(retried.json()["sessionId"])
    terminal = [e.type for e in events if e.type in ("turn.completed", "turn.failed")]
    assert terminal == ["turn.failed", "turn.completed"]


async def test_a_budget_approval_is_answered_with_the_buttons(make_host, slack_standin) -> None:
    # A turn may spend 300 tokens. The offline model's first step here spends 213 and the
    # next is estimated at as much again, so the turn parks before its second step; one
    # approval doubles what it may spend, enough to finish.
    budget = "agent = define_agent(model='test', budget={'turn_tokens': 300})\n"
    agent_py = "from agentkit import define_agent\n\n" + budget
    host = await make_host({**SLACK_FILES, "agent/agent.py": agent_py})
    async with app_client(host) as http:
        ts = "1700000042.000100"
        body, headers = event_request(envelope(mention("what is the weather in Oslo", ts)), SECRET)
        sent = await http.post("/v1/channels/slack/events", content=body, headers=headers)
        sid = sent.json()["sessionId"]
        [ask] = await eventually(
            lambda: [p for p in slack_standin.posts() if "blocks" in p.args], "the approval buttons"
        )
        assert ask.args["thread_ts"] == ts and "`budget`" in ask.args["text"]
        # The reason is shown to the approver beside the buttons.
        assert "budget exceeded" in json.dumps(ask.args["blocks"])
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
        clicked = await http.post(
            "/v1/channels/slack/interactions", content=form, headers=form_headers
        )
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
            lambda: [p for p in slack_standin.posts() if "tempC" in p.args.get("text", "")],
            "the reply",
        )
        assert [r.args["thread_ts"] for r in replies] == [ts]
