"""A Slack event whose hand-over failed is started by Slack's retry (the real app, in
process, so the dispatcher can fail once; the Web API is the loopback stand-in)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.options import ServerOptions
from tests.channels.conftest import fail_next_dispatch, write
from tests.channels.slack_payloads import envelope, event_request, mention
from tests.channels.slack_project import SECRET, SLACK_FILES, TOKEN
from tests.channels.slack_standin import SlackStandIn


@pytest.fixture
def standin() -> Iterator[SlackStandIn]:
    server = SlackStandIn(status_ok=True).start()
    yield server
    server.stop()


@pytest.fixture
async def host(
    tmp_path: Path, standin: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[LocalHost]:
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_API_URL", standin.url)
    monkeypatch.setenv("RESTART_LOG", str(tmp_path / "restarts.log"))
    project = write(tmp_path / "helpdesk", SLACK_FILES)
    local = LocalHost(AgentBundle.discover(project), LocalHostOptions(tmp_path / "state"))
    await local.start()
    yield local
    await local.runtime.dispatcher.drain()  # type: ignore[attr-defined]
    await local.aclose()


async def test_a_retry_of_an_event_whose_turn_could_not_start_runs_it(host: LocalHost) -> None:
    dispatcher = fail_next_dispatch(host)
    app = create_app([host.mount()], ServerOptions(mode="single"))
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000), raise_app_exceptions=False)
    payload = envelope(mention("what is the weather in Oslo", "1700000009.000100"))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
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
