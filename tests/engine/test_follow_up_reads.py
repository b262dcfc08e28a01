"""A message to an existing session reads the session's event log once.

The refusals (kill switch, pause) and settling a busy turn look at the same events, so the
request reads them once and passes them on (`refuse_message` returns them, `settle` takes
them). Counted over the real file store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.models.scripted import ScriptedModel, text
from agentkit.project.bundle import AgentBundle
from agentkit.store.files import FileStore

from ..fixtures.counting_store import CountingStore
from .conftest import ALICE


class Held:
    """A dispatcher that keeps the turns it is handed (none runs while reads are counted)."""

    def __init__(self) -> None:
        self.turns: list[tuple[str, str]] = []

    async def dispatch(self, session_id: str, turn_id: str) -> None:
        self.turns.append((session_id, turn_id))


@dataclass
class Counted:
    rt: AgentRuntime
    store: CountingStore
    held: Held


@pytest.fixture
async def counted(project: Path, tmp_path: Path) -> AsyncIterator[Counted]:
    files = FileStore(tmp_path / "state")
    store = CountingStore(files)
    model = ScriptedModel([text("first answer"), text("second answer")])
    rt = AgentRuntime(
        AgentBundle.discover(project),
        store,  # type: ignore[arg-type]
        model_resolver=lambda _id: model,
        state_root=tmp_path / "state",
    )
    held = Held()
    yield Counted(rt, store, held)
    dispatcher = rt.dispatcher
    if isinstance(dispatcher, LocalDispatcher):
        await dispatcher.close()
    await files.close()


async def _idle_session(c: Counted, **start: str) -> tuple[str, str]:
    """A session whose first turn has run to its end; then turns are held, reads counted."""
    accepted = await c.rt.start_session("hello", principal=ALICE, **start)  # type: ignore[arg-type]
    local = c.rt.dispatcher
    assert isinstance(local, LocalDispatcher)
    await local.drain()
    events = await c.store.inner.read(accepted.session_id)
    assert events[-1].type == "session.waiting", [e.type for e in events]
    c.rt.dispatcher = c.held
    c.store.reset()
    return accepted.session_id, accepted.continuation_token


async def test_a_follow_up_reads_the_log_once(counted: Counted) -> None:
    session_id, token = await _idle_session(counted)
    accepted = await counted.rt.follow_up(session_id, token, "again", principal=ALICE)
    assert counted.store.calls == [("read", session_id)]
    assert counted.held.turns == [(session_id, accepted.turn_id)]
    events = await counted.store.inner.read(session_id)
    assert events[-1].type == "message.received"
    assert events[-1].turn_id == accepted.turn_id


async def test_a_follow_up_by_key_reads_the_log_once(counted: Counted) -> None:
    session_id, _ = await _idle_session(
        counted, channel_id="slack", continuation_key="C1:1700000000.1"
    )
    accepted = await counted.rt.follow_up_by_key(
        "slack", "C1:1700000000.1", "again", principal=ALICE
    )
    assert accepted.session_id == session_id
    assert counted.store.calls == [("read", session_id)]
    assert counted.held.turns == [(session_id, accepted.turn_id)]


async def test_a_delivery_reads_the_log_once(counted: Counted) -> None:
    session_id, _ = await _idle_session(counted)
    accepted = await counted.rt.deliver(session_id, "a reminder fired")
    assert counted.store.calls == [("read", session_id)]
    assert counted.held.turns == [(session_id, accepted.turn_id)]
