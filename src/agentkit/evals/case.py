"""One eval case's world: a fresh store, the real engine, and scheduling on a manual clock.

Every case gets its own `CaseHost`, composed like `LocalHost` (the `AgentRuntime` over a
store, hook fan-out, reminders and schedules on a `LocalTimer`), except that time is a
`ManualClock`: nothing fires until a step advances it, and then due reminders and schedules
fire through the production paths. Cases never share state, so they run concurrently.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentkit.authoring.contexts import HostServices
from agentkit.costs import add_costs
from agentkit.engine.runtime import AgentRuntime
from agentkit.events import Event, EventType
from agentkit.hooks import LocalHookFanout
from agentkit.models.base import Model
from agentkit.project.bundle import AgentBundle
from agentkit.scheduling.local import LocalScheduling
from agentkit.scheduling.timer import ManualClock
from agentkit.sessions import Principal, SessionStatus, fold_status
from agentkit.store.memory import MemoryStore

__all__ = ["EVAL_PRINCIPAL", "CaseHost", "SettleTimeout"]

# Evals act as one caller; `admin` lets the runner read the task sessions schedules start.
EVAL_PRINCIPAL = Principal("eval", admin=True)
log = logging.getLogger("agentkit.evals")


class SettleTimeout(TimeoutError):
    """A session was still running when the case's time ran out."""


class CaseHost:
    """The engine and scheduling one case runs on (`open()`, then `aclose()`)."""

    def __init__(self, bundle: AgentBundle, model_resolver: Callable[[str | None], Model]) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="agentkit-eval-")
        self.store = MemoryStore()
        self.clock = ManualClock()
        self.services = HostServices(logger=logging.getLogger(f"agentkit.agent.{bundle.slug}"))
        self.fanout = LocalHookFanout.from_bundle(bundle)
        self.runtime = AgentRuntime(
            bundle,
            self.store,
            fanout=self.fanout,
            host_services=self.services,
            model_resolver=model_resolver,
            state_root=Path(self._tmp.name),
        )
        self.scheduling = LocalScheduling(
            self.store,
            self.runtime,
            definitions=bundle,
            host=self.services,
            dev=False,
            clock=self.clock,
        )
        # The agent's MCP connections, as `agentkit serve` gives them: a case sees the
        # server's tools and `host.mcp` exactly as production does. Imported here: the API
        # function loads this module with its routes, and its cold start stays free of the
        # tool machinery (tests/aws/test_handlers.py).
        from agentkit.mcp.connections import attach

        self.mcp = attach(bundle, self.runtime, self.services)

    async def open(self) -> None:
        await self.scheduling.start()

    async def aclose(self) -> None:
        try:
            await self.scheduling.aclose()
            if self.mcp is not None:
                await self.mcp.aclose()
            await self.fanout.close()
            await self.store.close()
        finally:
            self._tmp.cleanup()

    async def events(self, session_id: str, start: int = 0) -> list[Event]:
        return await self.runtime.read_events(session_id, principal=EVAL_PRINCIPAL, start=start)

    async def settle(self, session_id: str, *, timeout: float) -> list[Event]:
        """Wait (on the stream, no sleeps) until the session is not running; its events."""
        events = await self.events(session_id)
        while fold_status(events) == SessionStatus.RUNNING:
            more = await self.runtime.follow_events(
                session_id, principal=EVAL_PRINCIPAL, start=len(events), timeout=timeout
            )
            if not more:
                raise SettleTimeout(f"session {session_id} still running after {timeout:g}s")
            events.extend(more)
        return events

    async def wait_unleased(self, session_id: str, *, timeout: float) -> None:
        """Wait until no turn holds the session's lease.

        A turn parks (or ends) by appending its last event and then releasing the lease; a
        decision or a direct tool call in between would be refused as `session_busy`. The
        release is no event, so this polls the store briefly (the case's timeout bounds it).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while await self.store.get_lease(session_id) is not None:
            if loop.time() > deadline:
                raise SettleTimeout(f"session {session_id} still leased after {timeout:g}s")
            await asyncio.sleep(0.005)

    async def wait_for(
        self, session_id: str, event_type: str, *, start: int, timeout: float
    ) -> None:
        """Wait until an event of `event_type` at index >= `start` is in the stream."""
        pos = start
        while True:
            found = await self.runtime.follow_events(
                session_id, principal=EVAL_PRINCIPAL, start=pos, timeout=timeout
            )
            if not found:
                raise SettleTimeout(f"no {event_type} in {session_id} after {timeout:g}s")
            if any(e.type == event_type for e in found):
                return
            if any(e.type in _TURN_ENDS for e in found):
                return  # the turn ended before that event: nothing left to interrupt
            pos = found[-1].index + 1

    async def session_ids(self) -> list[str]:
        """Every session of this case (the eval's own and any a schedule started)."""
        ids: list[str] = []
        cursor: str | None = None
        while True:
            page = await self.store.list_sessions(None, limit=100, cursor=cursor)
            ids.extend(r.id for r in page.items)
            cursor = page.cursor
            if cursor is None:
                return ids

    async def settle_all(self, *, timeout: float) -> None:
        for sid in await self.session_ids():
            await self.settle(sid, timeout=timeout)

    async def others(self, main: str) -> dict[str, tuple[Event, ...]]:
        return {
            sid: tuple(await self.events(sid)) for sid in await self.session_ids() if sid != main
        }


_TURN_ENDS = frozenset({EventType.TURN_COMPLETED, EventType.TURN_FAILED})


def usage_of(events: list[Event] | tuple[Event, ...]) -> dict[str, Any]:
    """Token usage summed over the session's ended turns."""
    totals = {"inputTokens": 0, "outputTokens": 0}
    for e in events:
        if e.type in _TURN_ENDS:
            usage = e.data.get("usage") or {}
            totals["inputTokens"] += int(usage.get("inputTokens", 0))
            totals["outputTokens"] += int(usage.get("outputTokens", 0))
    return totals


def cost_of(events: list[Event] | tuple[Event, ...]) -> float | None:
    """Dollars summed over the session's ended turns (their `costUsd`).

    None when an ended turn's price was unknown, or when no turn ended: never a false zero.
    """
    ends = [e for e in events if e.type in _TURN_ENDS]
    if not ends:
        return None
    cost: float | None = 0.0
    for e in ends:
        raw = e.data.get("costUsd")
        known = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
        cost = add_costs(cost, known)
    return cost
