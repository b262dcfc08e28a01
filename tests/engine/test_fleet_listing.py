"""Listing the fleet over the runtime: filters folded from the events page by cursor, and
a page examines a bounded number of sessions however few of them match."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.engine.fleet import EXAMINED_PER_PAGE, FleetQuery, list_fleet
from agentkit.engine.runtime import AgentRuntime
from agentkit.errors import Forbidden
from agentkit.models.scripted import ScriptedModel
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal, SessionRecord, SessionStatus, new_session_id
from agentkit.store.memory import MemoryStore

from .conftest import ALICE, BOB, write_project

ADMIN = Principal("ops", admin=True)


async def fleet(tmp_path: Path, owners: list[str]) -> tuple[AgentRuntime, list[SessionRecord]]:
    store = MemoryStore()
    made = []
    for i, owner in enumerate(owners):
        at = f"2026-02-01T00:{i // 60:02d}:{i % 60:02d}.000Z"
        record = SessionRecord(id=new_session_id(), principal=owner, created_at=at, updated_at=at)
        await store.create_session(record)
        made.append(record)
    bundle = AgentBundle.discover(write_project(tmp_path / "proj"))
    runtime = AgentRuntime(
        bundle, store, model_resolver=lambda _id: ScriptedModel([]), state_root=tmp_path / "s"
    )
    return runtime, made


async def test_a_page_that_finds_nothing_still_hands_back_a_cursor(tmp_path: Path) -> None:
    runtime, _ = await fleet(tmp_path, ["alice"] * (EXAMINED_PER_PAGE + 30))
    running = FleetQuery(statuses=frozenset({SessionStatus.RUNNING}))

    first = await list_fleet(runtime, ALICE, running, limit=10)
    assert first.sessions == [] and first.cursor is not None
    second = await list_fleet(runtime, ALICE, running, limit=10, cursor=first.cursor)
    assert (second.sessions, second.cursor) == ([], None)


async def test_filtered_pages_list_each_match_once_newest_first(tmp_path: Path) -> None:
    runtime, made = await fleet(tmp_path, ["alice", "bob"] * 15)
    idle = FleetQuery(statuses=frozenset({SessionStatus.IDLE}), principal="bob")
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = await list_fleet(runtime, ADMIN, idle, limit=4, cursor=cursor)
        assert len(page.sessions) <= 4
        seen.extend(e.record.id for e in page.sessions)
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == [r.id for r in reversed(made) if r.principal == "bob"]


async def test_only_an_admin_names_another_principal(tmp_path: Path) -> None:
    runtime, _ = await fleet(tmp_path, ["alice", "bob"])
    with pytest.raises(Forbidden):
        await list_fleet(runtime, ALICE, FleetQuery(principal=BOB.id))
    with pytest.raises(Forbidden):
        await runtime.list_sessions(principal=ALICE, owner=BOB.id)
    own = await list_fleet(runtime, ALICE, FleetQuery(principal=ALICE.id))
    assert [e.record.principal for e in own.sessions] == ["alice"]
