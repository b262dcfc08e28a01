"""Over HTTP: `agent.bound`'s URLs lead back to the session, a deleted session is
`session_not_found`, and a tool input key the tool does not have is named in a 400."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from agentkit.store.files import FileStore
from tests.fixtures.http_server import SLUG, Served
from tests.server.helpers import read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="drives a real agentkit serve over HTTP")


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as c:
        yield c


def test_agent_bound_names_the_agent_and_paths_that_lead_back_to_the_session(
    client: httpx.Client, shared_server: Served
) -> None:
    url = shared_server.url
    sid = start_session(client, url, "hello")["sessionId"]
    events = read_stream(client, url, sid, until=turn_ends())
    [bound] = [e for e in events if e["type"] == "agent.bound"]
    assert bound["data"]["agentId"] == SLUG
    assert bound["data"]["runtime"] == "local"
    urls = bound["data"]["urls"]
    trace = client.get(url + urls["events"])
    assert trace.status_code == 200
    assert trace.text.splitlines()[0].startswith('{"type":"session.started"')
    assert client.get(url + urls["playground"]).status_code == 200
    with client.stream("GET", url + urls["stream"]) as live:  # replays, then follows
        assert live.status_code == 200
        assert '"type":"session.started"' in next(live.iter_lines())


def test_a_deleted_session_is_session_not_found(
    client: httpx.Client, shared_server: Served
) -> None:
    url = shared_server.url
    body = start_session(client, url, "hello")
    sid = body["sessionId"]
    read_stream(client, url, sid, until=turn_ends())
    assert asyncio.run(FileStore(shared_server.state_root / SLUG).delete_session(sid))

    events = client.get(f"{url}/v1/session/{sid}/events")
    follow = client.post(
        f"{url}/v1/session/{sid}",
        json={"message": "again", "continuationToken": body["continuationToken"]},
    )
    approvals = client.get(f"{url}/v1/session/{sid}/approvals")
    for r in (events, follow, approvals):
        assert (r.status_code, r.json()["error"]) == (404, "session_not_found"), r.text


def test_an_input_key_the_tool_does_not_have_is_a_400_naming_it(
    client: httpx.Client, shared_server: Served
) -> None:
    r = client.post(
        f"{shared_server.url}/v1/tools/get_weather", json={"input": {"city": "Paris", "cty": "x"}}
    )
    assert r.status_code == 400
    assert r.json()["error"] == "invalid_input"
    assert r.json()["message"] == (
        "invalid tool input: unknown key cty (did you mean city?); the tool takes city"
    )
