"""Custom channels over HTTP against `agentkit serve`: routes, validation, auth, receive,
continuation keys, task mode, delivery to `events` handlers, info, schedules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.channels.conftest import (
    assert_no_unexpected_traceback,
    channel_env_in,
    write_channel_project,
)
from tests.fixtures.http_server import Served, _env
from tests.server.helpers import dump, read_stream, turn_ends


def shared_server(base: Path, *args: str) -> Iterator[Served]:
    """One server of the channels agent for the tests that only touch sessions (continuation
    keys) of their own. Tests that read the whole delivery log, or need a bearer token,
    start their own with `serve_channels`."""
    env = _env(channel_env_in(base))
    env.pop("GITHUB_WEBHOOK_SECRET", None)  # never inherited from the shell
    served = Served(write_channel_project(base), base / "state", list(args), env).start()
    yield served
    served.stop()
    assert_no_unexpected_traceback(served)


@pytest.fixture(scope="module")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from shared_server(tmp_path_factory.mktemp("drive-dev"), "--dev")


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from shared_server(tmp_path_factory.mktemp("drive"))


def called_lines(served: Served) -> list[str]:
    """The drive handler's `called` lines in the server's channel log so far."""
    log = Path(served.env["CHANNEL_LOG"])
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if line.startswith("called")]


def sessions(client: httpx.Client, url: str) -> list[dict]:
    r = client.get(f"{url}/v1/sessions")
    assert r.status_code == 200, r.text
    return list(r.json()["sessions"])


def test_route_receive_and_continuation_keys(dev_server: Served) -> None:
    url = dev_server.url
    with httpx.Client(timeout=30) as client:
        first = client.post(f"{url}/v1/channels/drive", json={"pr_url": "pr-7"})
        assert first.status_code == 200, first.text
        sid = first.json()["sessionId"]
        assert first.json()["key"] == "pr-7"
        read_stream(client, url, sid, until=turn_ends())
        # The same key (through the slash form of `/`) continues the same session.
        again = client.post(f"{url}/v1/channels/drive/", json={"pr_url": "pr-7", "note": "more"})
        assert again.status_code == 200, again.text
        assert again.json()["sessionId"] == sid
        read_stream(client, url, sid, until=turn_ends(2))
        other = client.post(f"{url}/v1/channels/drive", json={"pr_url": "pr-8"})
        assert other.json()["sessionId"] != sid

        listed = {s["sessionId"]: s for s in sessions(client, url)}
        # Owned by the caller the agent's chain admitted: here the local developer.
        assert listed[sid]["principal"] == "local"
        assert listed[sid]["channelId"] == "drive"
        assert listed[sid]["continuationKey"] == "pr-7"
        messages = [e["data"] for e in dump(client, url, sid) if e["type"] == "message.received"]
        assert [m["message"] for m in messages] == ["Review pr-7", "Review pr-7 more"]
        assert {m["principal"] for m in messages} == {"local"}

        # A follow-up over the session API with the channel's key, as the owner (--dev admin).
        follow = client.post(
            f"{url}/v1/session/{sid}", json={"continuationToken": "pr-7", "message": "and docs"}
        )
        assert follow.status_code == 200, follow.text
        read_stream(client, url, sid, until=turn_ends(3))
        wrong = client.post(
            f"{url}/v1/session/{sid}", json={"continuationToken": "pr-8", "message": "x"}
        )
        assert wrong.status_code == 409


def test_invalid_body_is_400_and_the_handler_never_runs(dev_server: Served) -> None:
    served = dev_server
    calls = called_lines(served)
    with httpx.Client(timeout=30) as client:
        before = {s["sessionId"] for s in sessions(client, served.url)}
        for body in ({}, {"pr_url": ""}, {"pr_url": 5}, "not an object"):
            r = client.post(f"{served.url}/v1/channels/drive", json=body)
            assert r.status_code == 400, r.text
            assert r.json()["ok"] is False
            assert r.json()["error"] == "bad_request"
            assert "pr_url" in r.json()["message"] or "body" in r.json()["message"]
        broken = client.post(
            f"{served.url}/v1/channels/drive",
            content=b"{not json",
            headers={"content-type": "application/json"},
        )
        assert broken.status_code == 400
        assert {s["sessionId"] for s in sessions(client, served.url)} == before
    # The handler logs each call first; the route checks run synchronously before it, so
    # no other test's call can land here in between (the module runs its tests in turn).
    assert called_lines(served) == calls


def test_task_reply_answers_202_with_a_task_session(dev_server: Served) -> None:
    served = dev_server
    with httpx.Client(timeout=30) as client:
        r = client.post(f"{served.url}/v1/channels/drive/task", json={"what": "the billing code"})
        assert r.status_code == 202, r.text
        sid = r.json()["sessionId"]
        events = read_stream(
            client, served.url, sid, until=lambda e: e["type"] == "session.completed"
        )
        started = next(e for e in events if e["type"] == "session.started")
        assert started["data"]["mode"] == "task"
        assert started["data"]["principal"] == "local"
        assert events[1]["data"]["message"] == "Audit the billing code"


def test_channel_auth_own_and_agent_chain(plain_server: Served) -> None:
    served = plain_server
    with httpx.Client(timeout=30) as client:
        ping = f"{served.url}/v1/channels/signed/ping"
        assert client.post(ping, json={"text": "hi"}).status_code == 401
        bad = client.post(ping, json={"text": "hi"}, headers={"X-Partner-Key": "nope"})
        assert bad.status_code == 401 and bad.json()["error"] == "unauthorized"
        good = client.post(ping, json={"text": "hi"}, headers={"X-Partner-Key": "k1"})
        assert good.status_code == 200, good.text
        assert good.json() == {"pong": "hi", "principal": "partner"}
        # Channels without their own auth run the agent's chain: a proxied call is refused.
        proxied = client.get(
            f"{served.url}/v1/channels/drive/echo", headers={"X-Forwarded-For": "203.0.113.9"}
        )
        assert proxied.status_code == 401
        echo = client.get(f"{served.url}/v1/channels/drive/echo", params={"a": "1"})
        assert echo.json() == {"query": {"a": "1"}, "principal": "local"}
        # Wrong method on a channel path: JSON 405, not a handler call.
        assert client.delete(f"{served.url}/v1/channels/drive/echo").status_code == 405


def test_events_handlers_see_owned_sessions_in_order(serve_channels, channel_env) -> None:
    served = serve_channels("--dev")
    log = Path(channel_env["CHANNEL_LOG"])
    with httpx.Client(timeout=30) as client:
        sid = client.post(f"{served.url}/v1/channels/drive", json={"pr_url": "pr-9"}).json()[
            "sessionId"
        ]
        events = read_stream(client, served.url, sid, until=turn_ends())
        # A session of another channel (HTTP) is never delivered to the drive channel.
        http = client.post(f"{served.url}/v1/session", json={"message": "hello"}).json()
        read_stream(client, served.url, http["sessionId"], until=turn_ends())
        last = events[-1]["index"]
        # Delivery is asynchronous: wait (bounded) for the last event to reach the handler.
        for _ in range(400):
            lines = log.read_text().splitlines() if log.exists() else []
            if any(line.startswith(f"event {sid} {last} ") for line in lines):
                break
            read_stream(client, served.url, sid, start=last + 1, window=0.05)
        seen = [line.split() for line in lines if line.startswith("event ")]
        assert {row[1] for row in seen} == {sid}
        indexes = [int(row[2]) for row in seen]
        assert indexes == sorted(indexes) and len(set(indexes)) == len(indexes)
        assert {row[4] for row in seen} == {"local"}
        # The failing handler on step.started is never fatal: the turn completed, later
        # events were still delivered, and the "*" handler still saw step.started.
        assert events[-1]["type"] == "turn.completed"
        assert "turn.completed" in {row[3] for row in seen}
        assert "step.started" in {row[3] for row in seen}
        logged = client.get(f"{served.url}/v1/logs").json()["lines"]
        assert any(
            "channel:drive" in line["message"] and "failed on step.started" in line["message"]
            for line in logged
        )


def test_info_lists_channel_routes_with_schemas(plain_server: Served) -> None:
    served = plain_server
    with httpx.Client(timeout=30) as client:
        info = client.get(f"{served.url}/v1/info").json()
        channels = {c["name"]: c for c in info["channels"]}
        assert set(channels) == {"drive", "signed", "github"}
        routes = {(r["method"], r["path"]): r for r in channels["drive"]["routes"]}
        assert set(routes) == {
            ("POST", "/v1/channels/drive/"),
            ("POST", "/v1/channels/drive/task"),
            ("GET", "/v1/channels/drive/echo"),
        } or set(routes) == {
            ("POST", "/v1/channels/drive"),
            ("POST", "/v1/channels/drive/task"),
            ("GET", "/v1/channels/drive/echo"),
        }
        drive = next(r for (m, p), r in routes.items() if m == "POST" and "task" not in p)
        assert "pr_url" in drive["bodySchema"]["properties"]
        assert channels["github"]["kind"] == "github"
        spec = client.get(f"{served.root_url}/v1/openapi.json").json()
        assert any(p.startswith("/helpdesk/v1/channels/drive") for p in spec["paths"])


def test_schedule_hands_work_to_a_channel_by_object(dev_server: Served) -> None:
    served = dev_server
    with httpx.Client(timeout=30) as client:
        first = client.post(f"{served.url}/v1/channels/drive", json={"pr_url": "pr-1"}).json()
        read_stream(client, served.url, first["sessionId"], until=turn_ends())
        fired = client.post(f"{served.url}/v1/dev/schedules/nudge")
        assert fired.status_code == 200, fired.text
        assert fired.json()["sessionIds"] == [first["sessionId"]]
        events = read_stream(client, served.url, first["sessionId"], until=turn_ends(2))
        received = [e["data"] for e in events if e["type"] == "message.received"]
        assert received[-1]["message"] == "Nudge the review"
        assert received[-1]["source"] == "schedule"
        # By the channel's id: a key not seen yet starts a session owned by the channel.
        by_id = client.post(f"{served.url}/v1/dev/schedules/nudge_by_id")
        assert by_id.status_code == 200, by_id.text
        [sid] = by_id.json()["sessionIds"]
        assert sid != first["sessionId"]
        listed = {s["sessionId"]: s for s in sessions(client, served.url)}
        assert listed[sid]["principal"] == "channel:drive"
        assert listed[sid]["continuationKey"] == "pr-2"


def test_a_channels_own_auth_replaces_the_bearer_token(serve_channels) -> None:
    served = serve_channels("--bearer-token", "agent-token")
    with httpx.Client(timeout=30) as client:
        ping = f"{served.url}/v1/channels/signed/ping"
        # The channel's own check admits the partner without the agent's bearer token...
        good = client.post(ping, json={"text": "hi"}, headers={"X-Partner-Key": "k1"})
        assert good.status_code == 200, good.text
        assert good.json()["principal"] == "partner"
        # ...and a bearer token is no way around it.
        bearer = {"Authorization": "Bearer agent-token"}
        assert client.post(ping, json={"text": "hi"}, headers=bearer).status_code == 401
        # Channels without their own auth need the bearer token like the session API.
        echo = f"{served.url}/v1/channels/drive/echo"
        assert client.get(echo).status_code == 401
        assert client.get(echo, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get(echo, headers=bearer).status_code == 200
