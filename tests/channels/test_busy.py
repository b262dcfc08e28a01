"""The three busy strategies, each raced over HTTP against `agentkit serve`.

A tool that waits on a gate file keeps the first turn busy for as long as the test wants,
so "busy" never depends on timing; the test opens the gate when it is done racing.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import httpx

from tests.server.helpers import dump, read_stream, turn_ends

RACERS = 8


def wait_entered(gate: Path, timeout: float = 120.0) -> None:
    """Block until the gated tool is running (the session is busy)."""
    marker = Path(str(gate) + ".entered")
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert time.monotonic() < deadline, "the gated tool never started"
        time.sleep(0.02)


async def race(url: str, bodies: list[dict]) -> list[httpx.Response]:
    async with httpx.AsyncClient(timeout=120) as client:
        return list(
            await asyncio.gather(*(client.post(f"{url}/v1/channels/drive", json=b) for b in bodies))
        )


def start_gated(client: httpx.Client, url: str, gate: Path) -> str:
    r = client.post(f"{url}/v1/channels/drive", json={"pr_url": "gate"})
    assert r.status_code == 200, r.text
    wait_entered(gate)
    return str(r.json()["sessionId"])


def types(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


def test_reject_races(serve_channels, channel_env) -> None:
    served = serve_channels("--dev")
    gate = Path(channel_env["GATE_FILE"])
    with httpx.Client(timeout=60) as client:
        sid = start_gated(client, served.url, gate)
        busy = asyncio.run(race(served.url, [{"pr_url": "gate", "note": "reject"}] * RACERS))
        assert [r.status_code for r in busy] == [409] * RACERS, [r.text for r in busy]
        assert {r.json()["error"] for r in busy} == {"session_busy"}
        events = dump(client, served.url, sid)
        assert len(types(events, "message.received")) == 1
        assert not types(events, "message.queued")
        gate.touch()
        read_stream(client, served.url, sid, until=turn_ends())
        # Racing for the idle session (gate closed again, so the winner's turn stays busy):
        # exactly one message becomes a turn.
        gate.unlink()
        idle = asyncio.run(race(served.url, [{"pr_url": "gate", "note": "reject"}] * RACERS))
        assert Counter(r.status_code for r in idle) == {200: 1, 409: RACERS - 1}
        gate.touch()
        read_stream(client, served.url, sid, until=turn_ends(2))
        events = dump(client, served.url, sid)
        assert len(types(events, "message.received")) == 2
        assert [e["index"] for e in events] == list(range(len(events)))


def test_queue_races(serve_channels, channel_env) -> None:
    served = serve_channels("--dev")
    gate = Path(channel_env["GATE_FILE"])
    with httpx.Client(timeout=60) as client:
        sid = start_gated(client, served.url, gate)
        queued = asyncio.run(race(served.url, [{"pr_url": "gate", "note": "queue"}] * RACERS))
        assert [r.status_code for r in queued] == [200] * RACERS, [r.text for r in queued]
        assert {r.json()["sessionId"] for r in queued} == {sid}
        # Nothing ran yet: the first turn is still in the gated tool.
        events = dump(client, served.url, sid)
        assert len(types(events, "message.received")) == 1
        assert len(types(events, "message.queued")) == RACERS
        gate.touch()
        events = read_stream(client, served.url, sid, until=turn_ends(RACERS + 1), window=120)
        events = dump(client, served.url, sid)
        assert [e["index"] for e in events] == list(range(len(events)))
        order = [e["data"]["queueId"] for e in types(events, "message.queued")]
        accepted = [e["data"].get("queueId") for e in types(events, "message.received")][1:]
        assert accepted == order  # in the order queued, each once, nothing dropped
        ends = types(events, "turn.completed")
        assert len(ends) == RACERS + 1 and not types(events, "turn.failed")
        # Each queued turn started only after the previous one ended.
        turn_of = [e["turnId"] for e in events if e["type"] in ("turn.started", "turn.completed")]
        assert all(turn_of[i] == turn_of[i + 1] for i in range(0, len(turn_of), 2))


def test_interrupt_races(serve_channels, channel_env) -> None:
    served = serve_channels("--dev")
    gate = Path(channel_env["GATE_FILE"])
    with httpx.Client(timeout=60) as client:
        sid = start_gated(client, served.url, gate)

        async def racing() -> list[httpx.Response]:
            task = asyncio.ensure_future(
                race(served.url, [{"pr_url": "gate", "note": "interrupt"}] * RACERS)
            )
            await asyncio.sleep(0.5)  # let the racers reach the busy session (not a speed check)
            await asyncio.to_thread(gate.touch)
            return await task

        responses = asyncio.run(racing())
        statuses = Counter(r.status_code for r in responses)
        assert set(statuses) <= {200, 409}, [r.text for r in responses]
        assert statuses[200] >= 1
        wins = statuses[200]
        read_stream(client, served.url, sid, until=turn_ends(wins + 1), window=120)
        for _ in range(200):  # the last winner's turn may still be settling in
            events = dump(client, served.url, sid)
            if events[-1]["type"] in ("turn.completed", "turn.failed", "session.waiting"):
                break
            read_stream(client, served.url, sid, start=len(events), window=0.2)
        assert [e["index"] for e in events] == list(range(len(events)))
        assert len(types(events, "message.received")) == wins + 1
        failed = types(events, "turn.failed")
        assert all(e["data"]["error"] == "turn interrupted" for e in failed)
        assert len(types(events, "turn.completed")) + len(failed) == wins + 1
        assert not types(events, "message.queued")


def test_http_follow_up_on_busy(serve_channels, channel_env) -> None:
    served = serve_channels()
    gate = Path(channel_env["GATE_FILE"])
    url = served.url
    with httpx.Client(timeout=60) as client:
        start = client.post(f"{url}/v1/session", json={"message": "open the gate"}).json()
        sid, token = start["sessionId"], start["continuationToken"]
        wait_entered(gate)
        rejected = client.post(
            f"{url}/v1/session/{sid}",
            json={"continuationToken": token, "message": "now", "onBusy": "reject"},
        )
        assert rejected.status_code == 409 and rejected.json()["error"] == "session_busy"
        bad = client.post(
            f"{url}/v1/session/{sid}",
            json={"continuationToken": token, "message": "x", "onBusy": "later"},
        )
        assert bad.status_code == 400
        # The rejected request did not use up the token: queueing with it works.
        queued = client.post(
            f"{url}/v1/session/{sid}",
            json={"continuationToken": token, "message": "after that", "onBusy": "queue"},
        )
        assert queued.status_code == 200, queued.text
        assert queued.json()["continuationToken"] != token
        assert len(types(dump(client, url, sid), "message.received")) == 1
        gate.touch()
        read_stream(client, url, sid, until=turn_ends(2))
        received = types(dump(client, url, sid), "message.received")
        assert [m["data"]["message"] for m in received] == ["open the gate", "after that"]


def test_agent_default_strategy(serve_channels, channel_project: Path, channel_env) -> None:
    (channel_project / "agent" / "agent.py").write_text(
        "from agentkit import define_agent\n\n"
        'agent = define_agent(model="test", max_steps=6, on_busy="reject")\n'
    )
    served = serve_channels()
    gate = Path(channel_env["GATE_FILE"])
    url = served.url
    with httpx.Client(timeout=60) as client:
        start = client.post(f"{url}/v1/session", json={"message": "open the gate"}).json()
        sid, token = start["sessionId"], start["continuationToken"]
        wait_entered(gate)
        plain = client.post(
            f"{url}/v1/session/{sid}", json={"continuationToken": token, "message": "now"}
        )
        assert plain.status_code == 409 and plain.json()["error"] == "session_busy"
        # A channel without its own choice follows the agent's.
        client.post(f"{url}/v1/channels/drive", json={"pr_url": "gate"})
        again = client.post(f"{url}/v1/channels/drive", json={"pr_url": "gate"})
        assert again.status_code == 409, again.text
        gate.touch()
        read_stream(client, url, sid, until=turn_ends())
