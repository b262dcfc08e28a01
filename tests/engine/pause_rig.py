"""A turn that would run forever, paused mid-way: how long until it stops, and how many model
calls it made after the pause (there must be none).

The scripted model asks for a tool call at every step (different arguments each time, so the
loop breaker has nothing to say), and notes when each call came in. The pause lands while a
model call streams (`where="model"`: the stream is cancelled) or while a tool runs
(`where="tool"`: the tool gets `stop_grace`, then is cancelled). Used by
tests/engine/test_pause_measured.py and bench/bench_pause.py.
"""

from __future__ import annotations

import asyncio
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentkit.engine.runtime import AgentRuntime
from agentkit.models.base import ModelRequest
from agentkit.models.scripted import ScriptedModel, Step, call, delay
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal, SessionStatus
from agentkit.store.base import Store

OWNER = Principal("owner")
STEPS = 200
AGENT = {
    "agent/instructions.md": "You add numbers forever.\n",
    "agent/agent.py": """
        from agentkit import define_agent
        agent = define_agent(max_steps=500, stop_grace=0.5, loop_guard="off")
    """,
    "agent/tools/add.py": """
        from pydantic import BaseModel
        from agentkit import define_tool

        class AddInput(BaseModel):
            a: int
            b: int

        @define_tool(description="Add two integers.")
        def add(input: AddInput, ctx) -> int:
            return input.a + input.b
    """,
    "agent/tools/nap.py": """
        import asyncio
        from pydantic import BaseModel
        from agentkit import define_tool

        class NapInput(BaseModel):
            seconds: float

        @define_tool(description="Sleep a while.")
        async def nap(input: NapInput, ctx) -> str:
            await asyncio.sleep(input.seconds)
            return "rested"
    """,
}

Where = Literal["model", "tool"]


@dataclass(frozen=True, slots=True)
class PauseMeasure:
    where: Where
    calls_before: int  # model calls made before the pause
    calls_after: int  # model calls that began after the pause (must be 0)
    last_call_after_pause: float  # seconds from the pause to the last call (< 0: before)
    stopped_after: float  # seconds from the pause until the turn had ended
    turn_error: str | None


def write_agent(root: Path) -> AgentBundle:
    for rel, text in AGENT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return AgentBundle.discover(root)


class ForeverModel:
    """A scripted model whose steps never end the turn; it notes when each call began."""

    def __init__(self, where: Where, warmup: int = 3) -> None:
        self.began: list[float] = []
        self.ready = asyncio.Event()  # set once the step the pause is meant for is under way
        self.where = where
        self.warmup = warmup
        self.model = ScriptedModel([Step.respond(self._step) for _ in range(STEPS)])

    def _step(self, request: ModelRequest) -> Step:
        self.began.append(time.monotonic())
        n = len(self.began)
        if n < self.warmup:
            return Step.tool_calls(call("add", {"a": n, "b": 1}))
        self.ready.set()
        if self.where == "model":
            return Step.of(delay(60.0), call("add", {"a": n, "b": 1}))
        return Step.tool_calls(call("nap", {"seconds": 60.0}))


async def measure_pause(
    bundle: AgentBundle, store: Store, state: Path, where: Where
) -> PauseMeasure:
    """Run one forever-turn on `store`, pause it, and measure what happened after."""
    model = ForeverModel(where)
    rt = AgentRuntime(bundle, store, model_resolver=lambda _id: model.model, state_root=state)
    try:
        accepted = await rt.start_session("add forever", principal=OWNER)
        await asyncio.wait_for(model.ready.wait(), 30)
        if where == "tool":
            await _until(lambda: _nap_running(rt, accepted.session_id))
        calls_before = len(model.began)
        paused_at = time.monotonic()
        await rt.pause(accepted.session_id, principal=OWNER)
        await _until(lambda: _ended(rt, accepted.session_id))
        stopped_after = time.monotonic() - paused_at
        events = await rt.store.read(accepted.session_id)
        failed = [e for e in events if e.type == "turn.failed"]
        return PauseMeasure(
            where=where,
            calls_before=calls_before,
            calls_after=sum(1 for t in model.began if t >= paused_at),
            last_call_after_pause=model.began[-1] - paused_at,
            stopped_after=stopped_after,
            turn_error=failed[-1].data.get("error") if failed else None,
        )
    finally:
        await rt.dispatcher.close()  # type: ignore[attr-defined]


async def _nap_running(rt: AgentRuntime, session_id: str) -> bool:
    events = await rt.store.read(session_id)
    return any(
        e.type == "actions.requested" and e.data["actions"][0]["toolName"] == "nap" for e in events
    )


async def _ended(rt: AgentRuntime, session_id: str) -> bool:
    status = await rt.session_status(session_id)
    return status != SessionStatus.RUNNING and await rt.store.get_lease(session_id) is None


async def _until(check: object, timeout: float = 30.0) -> None:
    """Wait until the async `check()` says so: polled, never a fixed sleep."""
    deadline = time.monotonic() + timeout
    while not await check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("the condition did not hold in time")
        await asyncio.sleep(0.01)
