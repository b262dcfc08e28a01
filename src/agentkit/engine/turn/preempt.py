"""Running a step's tool calls so that a stop can end them: a grace period, then
cancellation."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from agentkit.engine.fleet_switch import PauseSwitch
from agentkit.engine.tools.task_start import start_task
from agentkit.engine.turn.recorder import Recorder
from agentkit.errors import TurnInterrupted

TOOL_POLL = 0.05  # how often running tools look for an interrupt
CANCEL_WAIT = 1.0  # how long cancelled tool calls get to unwind


async def await_preemptible(
    calls: list[Coroutine[Any, Any, None]],
    interrupted: Callable[[], Awaitable[bool]],
    stop_grace: float,
    cancel_signal: threading.Event,
) -> None:
    """Await `calls` as tasks, watching for an interrupt: once one is seen, `cancel_signal`
    is set, the calls get `stop_grace` seconds, then the rest are cancelled and the turn
    ends interrupted."""
    tasks = [start_task(c) for c in calls]
    pending: set[asyncio.Future[None]] = {t for t in tasks if not t.done()}
    deadline: float | None = None
    try:
        while pending:
            wait = TOOL_POLL if deadline is None else max(0.0, deadline - time.monotonic())
            _, pending = await asyncio.wait(pending, timeout=wait)
            if not pending:
                break
            if deadline is None:
                if await interrupted():
                    cancel_signal.set()
                    deadline = time.monotonic() + stop_grace
            elif time.monotonic() >= deadline:
                raise TurnInterrupted()
    finally:
        for t in pending:
            t.cancel()
        if pending:
            # Cancelled agent-execution calls kill their process group on the way out;
            # a tool that swallows the cancellation is not waited for long.
            await asyncio.wait(pending, timeout=CANCEL_WAIT)
    for t in tasks:
        t.result()  # an engine error in a call ends the turn like any other


async def stop_error_of(recorder: Recorder, switch: PauseSwitch | None, default: str) -> str:
    """The error an interrupted turn ends with: what paused or killed its session (read
    from the store: the pause may come from another process), the agent's kill switch, or
    else `default`."""
    from agentkit.engine.pausing import AGENT_PAUSED, stop_error

    error = stop_error(await recorder.store.read(recorder.session.id), default)
    if error == default and switch is not None and (await switch.read()).on:
        return AGENT_PAUSED
    return error
