"""Black-box tests of every session, tool and meta route against a real `agentkit serve`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest

from agentkit.cli import main
from tests.fixtures.http_server import SLUG, Served
from tests.server.helpers import (
    dump,
    indexes,
    of_type,
    read_stream,
    start_session,
    turn_ends,
)

pytestmark = pytest.mark.slow(reason="drives every spec route over HTTP")


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as c:
        yield c


@pytest.fixture
def url(shared_server: Served) -> str:
    return shared_server.url


def test_start_session_returns_handles_as_soon_as_accepted(client: httpx.Client, url: str) -> None:
    body = start_session(client, url, "What is the weather in Paris?")
    sid = body["sessionId"]
    assert body["ok"] is True
    assert sid.startswith("ses_")
    assert body["continuationToken"].startswith("http:")
    assert body["playgroundUrl"] == f"{url}/playground?sessionId={sid}"
    assert body["traceUrl"] == f"{url}/v1/session/{sid}/events"


@pytest.mark.smoke
def test_a_turn_streams_from_message_to_completion(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "What is the weather in Paris?")["sessionId"]
    events = read_stream(client, url, sid, until=turn_ends())
    types = [e["type"] for e in events]
    assert indexes(events) == list(range(len(events)))
    assert types[0] == "session.started"
    assert "message.received" in types and "actions.requested" in types
    assert types[-1] == "turn.completed"
    assert all(e["sessionId"] == sid for e in events)


def test_events_dump_is_the_recorded_stream(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "weather in Oslo")["sessionId"]
    streamed = read_stream(client, url, sid, until=turn_ends())
    dumped = dump(client, url, sid)
    assert dumped[: len(streamed)] == streamed
    assert dump(client, url, sid, start=3) == dumped[3:]


def test_stream_resumes_from_start_index_without_duplicates(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "weather in Rome")["sessionId"]
    everything = read_stream(client, url, sid, until=turn_ends())
    first = read_stream(client, url, sid, start=0, until=lambda e: e["index"] == 2)
    rest = read_stream(client, url, sid, start=first[-1]["index"] + 1, until=turn_ends())
    assert first + rest == everything


async def test_stream_follows_live_events_of_later_turns(client: httpx.Client, url: str) -> None:
    body = start_session(client, url, "weather in Lima")
    sid = body["sessionId"]
    first = read_stream(client, url, sid, until=turn_ends())
    live: list[dict[str, object]] = []
    opened = asyncio.Event()

    async def listen() -> None:
        async with (
            httpx.AsyncClient(timeout=30) as ac,
            ac.stream(
                "GET",
                f"{url}/v1/session/{sid}/stream",
                params={"startIndex": len(first), "window": 20},
            ) as response,
        ):
            opened.set()
            async for line in response.aiter_lines():
                if line:
                    live.append(json.loads(line))
                    if live[-1]["type"] in ("turn.completed", "turn.failed"):
                        return

    listener = asyncio.create_task(listen())
    await opened.wait()
    async with httpx.AsyncClient(timeout=30) as ac:
        follow = await ac.post(
            f"{url}/v1/session/{sid}",
            json={"continuationToken": body["continuationToken"], "message": "and in Quito?"},
        )
    assert follow.status_code == 200, follow.text
    await asyncio.wait_for(listener, 30)
    assert indexes(live) == list(range(len(first), len(first) + len(live)))  # type: ignore[arg-type]
    assert "message.received" in [e["type"] for e in live]
    assert live[-1]["type"] == "turn.completed"


def test_stream_window_ends_an_idle_stream(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "weather in Bern")["sessionId"]
    done = read_stream(client, url, sid, until=turn_ends())
    tail = read_stream(client, url, sid, start=len(done) + 50, window=0.5)
    assert tail == []


@pytest.mark.smoke
def test_follow_up_rotates_the_token_and_the_old_one_goes_stale(
    client: httpx.Client, url: str
) -> None:
    body = start_session(client, url, "weather in Kyiv")
    sid, token = body["sessionId"], body["continuationToken"]
    read_stream(client, url, sid, until=turn_ends())
    r = client.post(f"{url}/v1/session/{sid}", json={"continuationToken": token, "message": "ok"})
    assert r.status_code == 200, r.text
    assert r.json()["continuationToken"] != token
    stale = client.post(
        f"{url}/v1/session/{sid}", json={"continuationToken": token, "message": "again"}
    )
    assert stale.status_code == 409
    assert stale.json()["ok"] is False


def test_follow_up_to_a_busy_session_interrupts_the_running_turn(
    client: httpx.Client, url: str
) -> None:
    body = start_session(client, url, "run the slow job")
    sid = body["sessionId"]
    read_stream(client, url, sid, until=of_type("actions.requested"))
    r = client.post(
        f"{url}/v1/session/{sid}",
        json={"continuationToken": body["continuationToken"], "message": "never mind"},
    )
    assert r.status_code == 200, r.text
    events = read_stream(client, url, sid, until=turn_ends(2))
    failed = [e for e in events if e["type"] == "turn.failed"]
    assert failed and failed[0]["data"]["error"] == "turn interrupted"
    assert events[-1]["type"] == "turn.completed"


def test_follow_up_to_an_unknown_session_is_404(client: httpx.Client, url: str) -> None:
    r = client.post(
        f"{url}/v1/session/ses_doesnotexist000000000",
        json={"continuationToken": "http:x", "message": "hi"},
    )
    assert r.status_code == 404
    assert r.json()["ok"] is False


def test_stop_interrupts_a_running_turn(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "run the slow job")["sessionId"]
    read_stream(client, url, sid, until=of_type("actions.requested"))
    r = client.post(f"{url}/v1/session/{sid}/stop")
    assert r.status_code == 200
    assert r.json() == {"ok": True, "stopped": True}
    end = read_stream(client, url, sid, until=turn_ends())[-1]
    assert end["type"] == "turn.failed"
    assert end["data"]["error"] == "turn interrupted"


def test_stop_on_an_idle_session_reports_nothing_stopped(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "weather in Nice")["sessionId"]
    read_stream(client, url, sid, until=turn_ends())
    r = client.post(f"{url}/v1/session/{sid}/stop")
    assert r.json() == {"ok": True, "stopped": False}


def test_sessions_list_pages_with_a_cursor(client: httpx.Client, url: str) -> None:
    ids = {start_session(client, url, f"weather in town {i}")["sessionId"] for i in range(3)}
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        r = client.get(f"{url}/v1/sessions", params=params)
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page["sessions"]) <= 2
        seen += [s["sessionId"] for s in page["sessions"]]
        cursor = page["cursor"]
        if not cursor:
            break
    assert ids <= set(seen)
    assert len(seen) == len(set(seen))


def test_sessions_list_refuses_a_bad_limit(client: httpx.Client, url: str) -> None:
    r = client.get(f"{url}/v1/sessions", params={"limit": 0})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


@pytest.mark.smoke
def test_approvals_park_and_resolve(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "wipe the notes folder")["sessionId"]
    read_stream(client, url, sid, until=of_type("action.approval_requested"))
    pending = client.get(f"{url}/v1/session/{sid}/approvals").json()["approvals"]
    assert [p["toolName"] for p in pending] == ["wipe_notes"]
    call_id = pending[0]["callId"]
    r = client.post(f"{url}/v1/session/{sid}/approvals/{call_id}", json={"decision": "approve"})
    assert r.status_code == 200, r.text
    assert r.json() == {"ok": True, "callId": call_id, "decision": "approve"}
    events = read_stream(client, url, sid, until=turn_ends())
    results = [e for e in events if e["type"] == "action.result"]
    assert results[-1]["data"]["result"] == {"wiped": "notes"}
    assert client.get(f"{url}/v1/session/{sid}/approvals").json()["approvals"] == []


def test_resolving_an_unknown_approval_is_404(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "weather in Turin")["sessionId"]
    read_stream(client, url, sid, until=turn_ends())
    r = client.post(f"{url}/v1/session/{sid}/approvals/call_nope", json={"decision": "deny"})
    assert r.status_code == 404


def test_an_invalid_decision_is_400(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "weather in Turin")["sessionId"]
    r = client.post(f"{url}/v1/session/{sid}/approvals/call_x", json={"decision": "maybe"})
    assert r.status_code == 400


def test_direct_tool_call_runs_the_tool(client: httpx.Client, url: str) -> None:
    r = client.post(f"{url}/v1/tools/get_weather", json={"input": {"city": "Paris"}})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ok"] is True and body["toolName"] == "get_weather"
    assert body["isError"] is False
    assert body["result"] == {"city": "Paris", "tempC": 21}
    assert isinstance(body["durationMs"], int) and body["callId"]


def test_direct_tool_call_validates_its_input(client: httpx.Client, url: str) -> None:
    r = client.post(f"{url}/v1/tools/get_weather", json={"input": {"city": 3}})
    assert r.status_code == 400
    assert r.json()["ok"] is False


def test_unknown_tool_is_404_with_the_available_names(client: httpx.Client, url: str) -> None:
    r = client.post(f"{url}/v1/tools/nope", json={"input": {}})
    assert r.status_code == 404
    assert r.json()["available"] == ["get_weather", "slow_job", "wipe_notes"]


def test_agent_execution_tool_is_refused_on_the_host(client: httpx.Client, url: str) -> None:
    r = client.post(f"{url}/v1/tools/workspace_script", json={"input": {}})
    assert r.status_code == 400


def test_session_bound_tool_call_is_recorded_on_the_stream(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "weather in Riga")["sessionId"]
    before = read_stream(client, url, sid, until=turn_ends())
    r = client.post(
        f"{url}/v1/tools/get_weather", json={"input": {"city": "Riga"}, "sessionId": sid}
    )
    assert r.status_code == 200, r.text
    after = dump(client, url, sid, start=len(before))
    results = [e for e in after if e["type"] == "action.result"]
    assert results and results[0]["data"]["callId"] == r.json()["callId"]


def test_session_bound_tool_call_is_409_while_a_turn_runs(client: httpx.Client, url: str) -> None:
    sid = start_session(client, url, "run the slow job")["sessionId"]
    read_stream(client, url, sid, until=of_type("actions.requested"))
    r = client.post(f"{url}/v1/tools/get_weather", json={"input": {"city": "X"}, "sessionId": sid})
    assert r.status_code == 409
    assert r.json()["error"] == "session_busy"
    client.post(f"{url}/v1/session/{sid}/stop")


def test_info_is_what_agentkit_info_json_prints(
    client: httpx.Client, shared_server: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    r = client.get(f"{shared_server.url}/v1/info")
    assert r.status_code == 200
    assert main(["info", "--dir", str(shared_server.project), "--json"]) == 0
    assert r.json() == json.loads(capsys.readouterr().out)


def test_meta_bootstraps_the_playground(client: httpx.Client, url: str) -> None:
    r = client.get(f"{url}/v1/meta")
    assert r.json() == {
        "ok": True,
        "name": r.json()["name"],
        "slug": SLUG,
        "dev": False,
        "basePath": f"/{SLUG}",
        "playground": True,
        "docs": True,
        "host": "local",
    }


def test_health_at_agent_and_host_level(client: httpx.Client, shared_server: Served) -> None:
    assert client.get(f"{shared_server.url}/v1/health").json()["ok"] is True
    assert client.get(f"{shared_server.root_url}/v1/health").json()["ok"] is True


def test_logs_poll_with_a_cursor(client: httpx.Client, url: str) -> None:
    first = client.get(f"{url}/v1/logs").json()
    assert first["lines"], "startup is logged"
    again = client.get(f"{url}/v1/logs", params={"after": first["cursor"]}).json()
    assert all(line["seq"] > first["cursor"] for line in again["lines"])


def test_host_index_lists_the_agents(client: httpx.Client, shared_server: Served) -> None:
    agents = client.get(f"{shared_server.root_url}/v1/agents").json()["agents"]
    assert [a["slug"] for a in agents] == [SLUG]
    assert agents[0]["playgroundUrl"] == f"{shared_server.url}/playground"
    home = client.get(shared_server.root_url + "/")
    assert home.status_code == 200 and f"/{SLUG}/playground" in home.text


def test_docs_site_is_served(client: httpx.Client, shared_server: Served) -> None:
    r = client.get(f"{shared_server.root_url}/docs")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")


def test_openapi_lives_under_v1(client: httpx.Client, shared_server: Served) -> None:
    spec = client.get(f"{shared_server.root_url}/v1/openapi.json").json()
    assert f"/{SLUG}/v1/session" in spec["paths"]
    assert client.get(f"{shared_server.root_url}/v1/api-docs").status_code == 200


def test_unknown_route_is_json_404(client: httpx.Client, shared_server: Served) -> None:
    r = client.get(f"{shared_server.root_url}/nowhere")
    assert r.status_code == 404
    assert r.json()["error"] == "not_found"


def test_wrong_method_is_json_405(client: httpx.Client, url: str) -> None:
    r = client.get(f"{url}/v1/session")
    assert r.status_code == 405
    assert r.json()["error"] == "method_not_allowed"


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[]", b'{"message": 5}', b'{"message": ""}', b"{}"],
    ids=["malformed", "array", "wrong-type", "empty-message", "missing"],
)
def test_bad_bodies_are_400(client: httpx.Client, url: str, body: bytes) -> None:
    r = client.post(f"{url}/v1/session", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    expected = "invalid_json" if body == b"{not json" else "bad_request"
    assert r.json()["ok"] is False and r.json()["error"] == expected


def test_oversized_body_is_413(client: httpx.Client, url: str) -> None:
    r = client.post(f"{url}/v1/session", json={"message": "x" * (3 * 1024 * 1024)})
    assert r.status_code == 413
    assert r.json()["error"] == "payload_too_large"


def test_proxied_request_is_401_under_local_dev_strict(client: httpx.Client, url: str) -> None:
    r = client.get(f"{url}/v1/sessions", headers={"x-forwarded-for": "203.0.113.9"})
    assert r.status_code == 401
    assert r.json()["error"] == "unauthorized"


def test_workspace_files_land_in_the_session_workspace(
    client: httpx.Client, shared_server: Served
) -> None:
    files = {"notes/todo.txt": "buy milk"}
    sid = start_session(client, shared_server.url, "weather in Cork", workspaceFiles=files)[
        "sessionId"
    ]
    events = read_stream(client, shared_server.url, sid, until=turn_ends())
    received = next(e for e in events if e["type"] == "message.received")
    assert received["data"]["workspaceFiles"] == ["notes/todo.txt"]
    workspace = shared_server.state_root / SLUG / "sessions" / sid / "workspace"
    assert (workspace / "notes" / "todo.txt").read_text() == "buy milk"


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/passwd"])
def test_workspace_files_outside_the_workspace_are_400(
    client: httpx.Client, url: str, path: str
) -> None:
    r = client.post(f"{url}/v1/session", json={"message": "hi", "workspaceFiles": {path: "x"}})
    assert r.status_code == 400
    assert r.json()["ok"] is False


def test_sessions_list_refuses_a_forged_cursor(client: httpx.Client, url: str) -> None:
    r = client.get(f"{url}/v1/sessions", params={"cursor": "not-a-cursor"})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


def test_a_misspelt_key_in_a_start_body_is_a_400_naming_it(client: httpx.Client, url: str) -> None:
    r = client.post(f"{url}/v1/session", json={"mesage": "hello"})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"
    assert "mesage" in r.json()["message"]


def test_a_tool_argument_beside_input_is_a_400_naming_it(client: httpx.Client, url: str) -> None:
    # the argument belongs inside "input"; dropping it would run the tool on defaults
    r = client.post(f"{url}/v1/tools/get_weather", json={"city": "Paris"})
    assert r.status_code == 400
    assert "city" in r.json()["message"]
