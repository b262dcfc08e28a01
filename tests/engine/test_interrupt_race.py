"""A losing follow-up never interrupts the winner's fresh turn: its interrupt is one
conditional write naming the turn it saw and the token it presented. The loser is delayed
right before that write (a slow network, a paused process)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentkit.engine.runtime import AgentRuntime
from agentkit.errors import Conflict
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.store.base import Store

from .conftest import ALICE, Env, settle


class DelayedWrites:
    """A store whose interrupt writes wait for `gate` (everything else passes through)."""

    def __init__(self, inner: Store, gate: asyncio.Event, reached: asyncio.Event) -> None:
        self._inner, self._gate, self._reached = inner, gate, reached

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def set_interrupt(self, session_id: str, requested: bool) -> None:
        if requested:
            self._reached.set()
            await self._gate.wait()
        await self._inner.set_interrupt(session_id, requested)

    async def request_interrupt(self, session_id: str, turn_id: str, **kw: Any) -> bool:
        self._reached.set()
        await self._gate.wait()
        return await self._inner.request_interrupt(session_id, turn_id, **kw)


async def started(rt: AgentRuntime, session_id: str, turn_id: str) -> None:
    for _ in range(3000):
        events = await rt.store.read(session_id)
        if "turn.started" in [e.type for e in events if e.turn_id == turn_id]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the winner's turn never started")


async def test_a_delayed_loser_never_stops_the_winners_turn(env: Env) -> None:
    steps = [
        Step.tool_calls(call("nap", {"seconds": 60}, id="a1")),
        Step.tool_calls(call("nap", {"seconds": 1.5}, id="b1")),
        Step.text("B done"),
    ]
    winner = env.runtime(ScriptedModel(steps))
    acc = await winner.start_session("first", principal=ALICE)
    await started(winner, acc.session_id, acc.turn_id)
    gate, reached = asyncio.Event(), asyncio.Event()
    loser = AgentRuntime(
        winner.bundle,
        DelayedWrites(env.new_store(), gate, reached),  # type: ignore[arg-type]
        model_resolver=lambda _id: ScriptedModel([]),  # type: ignore[arg-type,return-value]
        state_root=env.state,
    )
    env.runtimes.append(loser)
    losing = asyncio.create_task(
        loser.follow_up(acc.session_id, acc.continuation_token, "loser", principal=ALICE)
    )
    await asyncio.wait_for(reached.wait(), 30)  # the loser is about to write its interrupt
    won = await winner.follow_up(acc.session_id, acc.continuation_token, "winner", principal=ALICE)
    await started(winner, acc.session_id, won.turn_id)
    gate.set()  # the loser's write lands now, while the winner's turn runs
    with pytest.raises(Conflict) as lost:
        await asyncio.wait_for(losing, 30)
    assert lost.value.code == "session_busy"
    await settle(winner)
    events = await winner.store.read(acc.session_id)
    kinds = [e.type for e in events if e.turn_id == won.turn_id]
    assert "turn.failed" not in kinds
    assert kinds.count("turn.completed") == 1
    assert [e.data.get("isError") for e in events if e.type == "action.result"][-1] is False
