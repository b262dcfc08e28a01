"""`GET /v1/sessions`: each entry carries the session's status folded from its events, read
cheaply from the tail of the stream."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.events import Event
from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.options import ServerOptions
from agentkit.sessions import Principal, fold_status, fold_status_tail
from tests.fixtures.http_server import SLUG, write_agent

ME = Principal("local")
SID = "ses_" + "s" * 22


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[LocalHost]:
    bundle = AgentBundle.discover(write_agent(tmp_path / SLUG))
    local = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state", dev=True))
    await local.start()
    yield local
    await local.aclose()


@pytest.fixture
async def client(host: LocalHost) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app([host.mount()], ServerOptions())
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        yield c


async def wait_for(host: LocalHost, sid: str, type_: str) -> Event:
    start = 0
    for _ in range(100):
        events = await host.store.follow(sid, start, timeout=10)
        for event in events:
            if event.type == type_:
                return event
        if events:
            start = events[-1].index + 1
    raise AssertionError(f"no {type_} in {sid}")


async def test_each_listed_session_carries_its_folded_status(
    client: httpx.AsyncClient,
    host: LocalHost,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    # The job waits for a gate nobody opens: it runs until the test stops it.
    monkeypatch.setenv("SLOW_JOB_GATES", str(tmp_path / "gates"))
    idle = await host.runtime.start_session("What is the weather in Paris?", principal=ME)
    await wait_for(host, idle.session_id, "session.waiting")
    parked = await host.runtime.start_session("Please wipe the notes.", principal=ME)
    await wait_for(host, parked.session_id, "action.approval_requested")
    busy = await host.runtime.start_session("Run the slow job.", principal=ME)
    await wait_for(host, busy.session_id, "actions.requested")

    r = await client.get(f"/{SLUG}/v1/sessions")
    assert r.status_code == 200
    listed = {s["sessionId"]: s for s in r.json()["sessions"]}
    assert listed[idle.session_id]["status"] == "idle"
    assert listed[parked.session_id]["status"] == "awaiting_approval"
    assert listed[busy.session_id]["status"] == "running"
    entry = listed[idle.session_id]
    assert (entry["channelId"], entry["mode"]) == ("http", "chat")
    assert entry["createdAt"] <= entry["updatedAt"]
    await host.runtime.stop(busy.session_id, principal=ME)
    await wait_for(host, busy.session_id, "turn.failed")


async def test_a_finished_task_session_is_listed_completed(
    client: httpx.AsyncClient, host: LocalHost
) -> None:
    task = await host.runtime.start_session("Summarize.", principal=ME, mode="task")
    await wait_for(host, task.session_id, "session.completed")
    r = await client.get(f"/{SLUG}/v1/sessions")
    [entry] = [s for s in r.json()["sessions"] if s["sessionId"] == task.session_id]
    assert (entry["mode"], entry["status"]) == ("task", "completed")


def _event(index: int, type_: str, call_id: str | None = None) -> Event:
    data = {"callId": call_id} if call_id is not None else {}
    return Event(type=type_, index=index, session_id=SID, at="2030-01-01T00:00:00Z", data=data)


def _random_stream(rng: random.Random, length: int) -> list[Event]:
    kinds = [
        "message.received",
        "turn.started",
        "step.started",
        "message.appended",
        "action.approval_requested",
        "action.approval_resolved",
        "turn.completed",
        "turn.failed",
        "session.waiting",
        "session.completed",
        "session.failed",
    ]
    return [_event(i, rng.choice(kinds), rng.choice(["c1", "c2", "c3"])) for i in range(length)]


async def test_folding_the_tail_gives_the_status_of_the_whole_stream() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        events = _random_stream(rng, rng.randrange(0, 80))

        async def read(start: int, limit: int, events: list[Event] = events) -> list[Event]:
            return events[start : start + limit]

        for window in (1, 3, 16):
            tail = await fold_status_tail(read, len(events), window=window)
            assert tail == fold_status(events), [e.type for e in events]


async def test_a_settled_session_with_a_long_history_costs_one_small_read() -> None:
    history = [_event(i, "message.appended") for i in range(10_000)]
    history += [_event(10_000, "turn.completed"), _event(10_001, "session.waiting")]
    reads: list[tuple[int, int]] = []

    async def read(start: int, limit: int) -> list[Event]:
        reads.append((start, limit))
        return history[start : start + limit]

    assert await fold_status_tail(read, len(history)) == "idle"
    assert reads == [(len(history) - 16, 16)]


@pytest.mark.parametrize("kind", ["memory", "files", "dynamodb"])
async def test_every_store_serves_the_tail_the_status_fold_reads(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from agentkit.events import EventDraft
    from agentkit.sessions import SessionRecord
    from agentkit.store.files import FileStore
    from agentkit.store.memory import MemoryStore

    if kind == "memory":
        store: Any = MemoryStore()
    elif kind == "files":
        store = FileStore(tmp_path / "state")
    else:
        store = request.getfixturevalue("dynamodb_store_factory")()
    try:
        await store.create_session(SessionRecord(id=SID, principal="local"))
        turn = ["message.received", "turn.started", "message.appended", "turn.completed"]
        await store.append(SID, [EventDraft(type=t, data={}) for t in turn * 10])
        parked = [("message.received", None), ("action.approval_requested", "c1")]
        await store.append(
            SID, [EventDraft(type=t, data={"callId": c} if c else {}) for t, c in parked]
        )

        async def read(start: int, limit: int) -> list[Event]:
            return list(await store.read(SID, start, limit))

        length = await store.next_index(SID)
        assert length == 42
        assert await fold_status_tail(read, length, window=2) == "awaiting_approval"
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=ten", "limit"),
        ("cursor=" + "c" * 2049, "cursor"),
    ],
)
async def test_a_bad_listing_query_is_a_400_naming_the_parameter(
    client: httpx.AsyncClient, query: str, named: str
) -> None:
    r = await client.get(f"/{SLUG}/v1/sessions?{query}")
    assert r.status_code == 400
    assert r.json()["ok"] is False and r.json()["error"] == "bad_request"
    assert named in r.json()["message"]


async def test_the_listing_query_is_documented_in_the_openapi_document(
    client: httpx.AsyncClient,
) -> None:
    doc = (await client.get("/v1/openapi.json")).json()
    operation = doc["paths"][f"/{SLUG}/v1/sessions"]["get"]
    names = {p["name"] for p in operation["parameters"]}
    assert {"limit", "cursor"} <= names
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/SessionList"}
