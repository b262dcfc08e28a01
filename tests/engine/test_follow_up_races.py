"""Follow-ups racing each other, and a follow-up racing a direct tool call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.errors import Conflict
from agentkit.models.base import ModelRequest
from agentkit.models.scripted import Part, ScriptedModel, Step, delay, text
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import SessionRecord
from agentkit.store.memory import MemoryStore

from .conftest import ALICE, Env, settle


class SlowReads(MemoryStore):
    """A store whose armed `get_session` reads the record, then answers only once released:
    a reply delayed in flight, so the caller acts on what was true when it asked."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.read_taken = asyncio.Event()
        self.release = asyncio.Event()

    async def get_session(self, session_id: str) -> SessionRecord | None:
        record = await super().get_session(session_id)
        if self.armed:
            self.armed = False
            self.read_taken.set()
            await self.release.wait()
        return record


@dataclass
class Racing:
    """A runtime over `SlowReads`; `first` is set once the first turn streams, `second`
    once the next one does (a long first turn, then a short one)."""

    rt: AgentRuntime
    store: SlowReads
    first: asyncio.Event
    second: asyncio.Event


@pytest.fixture
async def racing(project: Path, tmp_path: Path) -> AsyncIterator[Racing]:
    gate_a, gate_b = asyncio.Event(), asyncio.Event()

    def first(request: ModelRequest) -> list[Part]:
        gate_a.set()
        return [*text("working "), delay(30), *text("never")]

    def second(request: ModelRequest) -> list[Part]:
        gate_b.set()
        return [*text("accepted "), delay(0.3), *text("done")]

    store = SlowReads()
    model = ScriptedModel([Step.respond(first), Step.respond(second)])
    rt = AgentRuntime(
        AgentBundle.discover(project),
        store,
        model_resolver=lambda _id: model,
        state_root=tmp_path / "state",
    )
    yield Racing(rt, store, gate_a, gate_b)
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    await dispatcher.close()


async def test_a_losing_duplicate_follow_up_does_not_interrupt_the_winner(
    racing: Racing,
) -> None:
    rt, store, gate_a, gate_b = racing.rt, racing.store, racing.first, racing.second
    acc = await rt.start_session("slow", principal=ALICE)
    await gate_a.wait()
    # The loser reads the session (the token still current) before the winner is accepted,
    # and goes on only once the winner's turn is running.
    store.armed = True
    loser = asyncio.create_task(
        rt.follow_up(acc.session_id, acc.continuation_token, "loser", principal=ALICE)
    )
    await store.read_taken.wait()
    winner = await rt.follow_up(acc.session_id, acc.continuation_token, "winner", principal=ALICE)
    await gate_b.wait()
    store.release.set()
    with pytest.raises(Conflict) as err:
        await loser
    assert err.value.code == "session_busy"
    await settle(rt)
    events = await store.read(acc.session_id)
    ends = [(e.type, e.turn_id) for e in events if e.type in ("turn.failed", "turn.completed")]
    assert ends == [("turn.failed", acc.turn_id), ("turn.completed", winner.turn_id)]


async def test_a_follow_up_waits_for_a_direct_call_that_outlives_the_lease(env: Env) -> None:
    rt = env.runtime([Step.text("hi"), Step.text("after")], lease_ttl=0.3)
    acc = await rt.start_session("hello", principal=ALICE)
    await settle(rt)
    start = await rt.store.next_index(acc.session_id)
    call = asyncio.create_task(
        rt.call_tool("nap", {"seconds": 1.0}, principal=ALICE, session_id=acc.session_id)
    )
    requested = await rt.store.follow(acc.session_id, start, 5.0)  # the call has begun
    assert [e.type for e in requested] == ["actions.requested"]
    await asyncio.sleep(0.5)  # past the lease's TTL, the tool still running (renewed)
    # The follow-up waits for the call (well inside its settle timeout) and is accepted
    # after it: never `session_busy`, never a turn beside the still-running call.
    nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "now", principal=ALICE)
    await call
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    result_at = next(e.index for e in events if e.type == "action.result")
    received_at = next(
        e.index for e in events if e.type == "message.received" and e.turn_id == nxt.turn_id
    )
    assert received_at > result_at
