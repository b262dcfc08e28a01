"""Follow-ups racing each other, and a follow-up racing a direct tool call."""

from __future__ import annotations

import asyncio
import time
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
from agentkit.store.base import Lease
from agentkit.store.memory import MemoryStore

from .conftest import ALICE, Env, StoreClock, settle


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


GATED_TOOL = """
import asyncio
from pathlib import Path

from pydantic import BaseModel
from agentkit import define_tool


class GateInput(BaseModel):
    path: str


@define_tool(description="Wait until a file exists (the test's gate).")
async def wait_for_gate(input: GateInput, ctx) -> str:
    while not Path(input.path).exists():
        await asyncio.sleep(0.01)
    return "opened"
"""


async def test_a_follow_up_waits_for_a_direct_call_that_outlives_the_lease(
    env: Env, project: Path, tmp_path: Path
) -> None:
    (project / "agent" / "tools" / "wait_for_gate.py").write_text(GATED_TOOL)
    env.bundle = AgentBundle.discover(project)
    ttl = 0.3
    clock = StoreClock()  # leases expire by this clock; only the test moves it
    store = env.new_store_on(clock)
    rt = env.runtime(
        [Step.text("hi"), Step.text("after")], store=store, lease_ttl=ttl, settle_timeout=120
    )
    acc = await rt.start_session("hello", principal=ALICE)
    await settle(rt)
    start = await rt.store.next_index(acc.session_id)
    gate = tmp_path / "gate"
    call = asyncio.create_task(
        rt.call_tool(
            "wait_for_gate", {"path": str(gate)}, principal=ALICE, session_id=acc.session_id
        )
    )
    requested = await rt.store.follow(acc.session_id, start, 60.0)  # the call has begun
    assert [e.type for e in requested] == ["actions.requested"]
    first = await store.get_lease(acc.session_id)
    assert first is not None
    # The call outlives its lease's first term: the store's clock is moved past that
    # expiry a sixth of the TTL at a time, each step only once the call has renewed.
    seen = first.expires_at
    clock.now += ttl / 6
    deadline = time.monotonic() + 60
    while clock.now < first.expires_at + ttl:
        assert time.monotonic() < deadline, "the call stopped renewing its lease"
        lease = await store.get_lease(acc.session_id)
        assert lease is not None and lease.holder == first.holder
        if lease.expires_at > seen:
            seen = lease.expires_at
            clock.now += ttl / 6
        await asyncio.sleep(0.01)
    # The follow-up finds the session leased by the running call and waits for it: never
    # `session_busy`, never a turn beside the call. The gate opens only once it waits.
    waiting = asyncio.Event()
    read_lease = store.get_lease

    async def watched(session_id: str) -> Lease | None:
        lease = await read_lease(session_id)
        if lease is not None:
            waiting.set()
        return lease

    store.get_lease = watched  # type: ignore[method-assign]
    follow = asyncio.create_task(
        rt.follow_up(acc.session_id, acc.continuation_token, "now", principal=ALICE)
    )
    await asyncio.wait_for(waiting.wait(), 60)
    assert not call.done() and not follow.done()
    gate.touch()
    nxt = await follow
    assert (await call).result == "opened"
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    result_at = next(e.index for e in events if e.type == "action.result")
    received_at = next(
        e.index for e in events if e.type == "message.received" and e.turn_id == nxt.turn_id
    )
    assert received_at > result_at
