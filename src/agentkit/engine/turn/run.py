"""Running one turn of a session: the turn lease, its renewal, interrupts, the model loop.

`AgentRuntime.run_turn` lands here. The lease makes a turn dispatched twice run once; a
turn whose process died (started, not resumable) is ended as lost instead of re-run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from agentkit.engine.arms import Arms
from agentkit.engine.busy import drain_queue
from agentkit.engine.deadline import (
    Continuation,
    Deadline,
    find_marker,
    leave_marker,
    take_marker,
)
from agentkit.engine.fold import TurnState, fold_turn
from agentkit.engine.lifecycle import LOST_TURN
from agentkit.engine.turns import fail_turn
from agentkit.errors import LeaseLost, ModelError
from agentkit.events import Event
from agentkit.sessions import SessionRecord

if TYPE_CHECKING:
    from agentkit.engine.runtime import AgentRuntime

log = logging.getLogger("agentkit.engine.running")
STORE_INTERRUPT_POLL = 0.25


async def run_turn(
    rt: AgentRuntime, session_id: str, turn_id: str, deadline: Deadline | None = None
) -> None:
    """Run or resume one turn under the session's lease; nothing when another holds it.

    With a `deadline` (a host whose invocations end) the turn may stop at a step boundary
    and dispatch itself again (see `engine.deadline`); the lease is released first, so the
    next invocation can take it."""
    record = rt.known_record(session_id) or await rt.store.get_session(session_id)
    if record is None:
        return
    holder = f"{turn_id}:{secrets.token_hex(6)}"
    if not await rt.store.acquire_lease(session_id, holder, rt.lease_ttl):
        return
    # Once the lease is lost, someone else owns the turn: it stops at its next safe point.
    turns = rt.turns
    renewer = LeaseKeeper(rt, session_id, holder, on_lost=lambda: turns.stop(session_id))
    continued: Continuation | None = None
    turns.track(session_id, turn_id)
    try:
        events = await rt.store.read(session_id)
        state = fold_turn(events, turn_id)
        if state.terminal or not state.received or state.parked:
            return
        resume = None
        if state.started and not state.resumable:
            resume = await find_marker(rt.store, session_id, state)
            if resume is None:
                await fail_turn(rt.recorder(record, turn_id, holder), state, LOST_TURN)
                return
            await take_marker(rt.store, session_id, turn_id)
            if await rt.store.interrupt_requested(session_id, turn_id):
                # A stop asked for between invocations is seen before anything starts.
                turns.stop(session_id)
        continued = await _drive(rt, record, turn_id, state, events, holder, deadline, resume)
        if continued is not None:
            # The marker is left only while the lease is still this worker's.
            if not await rt.store.renew_lease(session_id, holder, rt.lease_ttl):
                raise LeaseLost(f"lease of {session_id} lost before continuing")
            await leave_marker(rt.store, session_id, turn_id, continued)
    except LeaseLost:
        continued = None
        log.warning("turn %s lost its lease to another worker; it stops here", turn_id)
    finally:
        await renewer.stop()
        # The stored flag stays until the next message is accepted (`AgentRuntime._accept`).
        turns.untrack(session_id, turn_id)
        await rt.store.release_lease(session_id, holder)
    if continued is not None:
        # A failure here propagates: the host retries this invocation, which continues.
        await rt.dispatcher.dispatch(session_id, turn_id)
        return
    # Messages queued behind this turn (`on_busy="queue"`) start now, oldest first.
    try:
        await drain_queue(rt, session_id)
    except Exception:  # the turn is over either way; recovery or the next message retries
        log.exception("could not start the queued message of session %s", session_id)


async def _drive(
    rt: AgentRuntime,
    record: SessionRecord,
    turn_id: str,
    state: TurnState,
    events: list[Event],
    holder: str,
    deadline: Deadline | None = None,
    resume: Continuation | None = None,
) -> Continuation | None:
    """Run the model loop; returns where the turn stopped when it is to continue."""
    recorder = rt.recorder(record, turn_id, holder)
    parts = rt.parts  # this turn's, even if the bundle is reloaded while it runs
    arms = Arms.of(events, parts.experiments)
    try:
        model = rt.model_resolver(arms.model) if arms.model else parts.model()
    except ModelError as exc:
        await fail_turn(recorder, state, str(exc))
        return None
    # Loaded on the first turn only: a process that just accepts requests never needs it.
    from agentkit.engine.loop import TurnDeps, TurnRunner

    tools = await parts.turn_tools(rt.tool_providers)
    if arms.allow is not None or arms.deny:
        tools = {n: e for n, e in tools.items() if arms.keep_tool(n)}
    deps = TurnDeps(
        manifest=parts.manifest,
        session=record,
        recorder=recorder,
        model=model,
        resolve_model=rt.model_resolver,
        tools=tools,
        system=arms.system(parts.system_prompt()),
        max_steps=arms.max_steps,
        abs=arms.abs,
        host=rt.host,
        workspace=rt.workspace(record.id),
        state_root=rt.state_root,
        project_root=getattr(parts.bundle, "root", None),
        interrupted=_interrupt_check(rt, record.id, turn_id),
        events=events,
        turns=rt.turns,
        prepare_workspace=lambda: rt.prepare_workspace(record.id, {}),
        stop_grace=parts.manifest.agent.stop_grace,
        deadline=deadline,
        resume=resume,
        clock=rt.clock,
    )
    runner = TurnRunner(deps, state)
    await runner.run()
    return runner.continued


def _interrupt_check(
    rt: AgentRuntime, session_id: str, turn_id: str
) -> Callable[[], Awaitable[bool]]:
    """Local stops are seen at once; the store's flag (set by other processes) is read
    at most every `STORE_INTERRUPT_POLL` seconds, starting that long into the turn."""
    last = time.monotonic()
    turns = rt.turns

    async def check() -> bool:
        nonlocal last
        if turns.is_stopped(session_id, turn_id):
            return True
        now = time.monotonic()
        if now - last < STORE_INTERRUPT_POLL:
            return False
        last = now
        return await rt.store.interrupt_requested(session_id, turn_id)

    return check


class LeaseKeeper:
    """Keeps a lease renewed for as long as the holder works (`keep_lease`), from a third
    of its TTL on.

    Most turns end well before their first renewal is due, so no task is made until then:
    a timer handle starts the renewal, and `stop` cancels whichever of the two exists.
    `on_lost` runs once the lease is definitely lost (another holder has it, or it ran out).
    """

    def __init__(
        self, rt: AgentRuntime, session_id: str, holder: str, on_lost: Callable[[], None]
    ) -> None:
        self._rt, self._session_id, self._holder = rt, session_id, holder
        self._on_lost = on_lost
        self._ttl = rt.lease_ttl
        self._acquired = time.monotonic()
        self._task: asyncio.Task[None] | None = None
        self._timer = asyncio.get_running_loop().call_later(self._ttl / 3, self._start)

    def _start(self) -> None:
        self._task = asyncio.ensure_future(self._keep())

    async def _keep(self) -> None:
        rt, session_id, holder = self._rt, self._session_id, self._holder
        if await _renew_once(rt, session_id, holder, self._ttl, self._acquired):
            await keep_lease(rt, session_id, holder, self._ttl)
        self._on_lost()

    async def stop(self) -> None:
        """Stop renewing (the lease itself is released by the caller)."""
        self._timer.cancel()
        task = self._task
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def keep_lease(
    rt: AgentRuntime, session_id: str, holder: str, ttl: float | None = None
) -> None:
    """Renew the session's lease every third of its TTL; return once it is lost.

    A renewal that fails (a throttled write, a network blip) is retried with backoff
    while the lease is still ours; only a definite loss (the store says another holder
    has it, or it ran out) ends the renewal. `ttl` is the runtime's `lease_ttl` unless given."""
    ttl = rt.lease_ttl if ttl is None else ttl
    renewed = time.monotonic()
    while True:
        await asyncio.sleep(ttl / 3)
        if not await _renew_once(rt, session_id, holder, ttl, renewed):
            return
        renewed = time.monotonic()


async def _renew_once(
    rt: AgentRuntime, session_id: str, holder: str, ttl: float, renewed: float
) -> bool:
    """Renew once, retrying failures while the lease (last renewed at `renewed`,
    monotonic) may still be ours; False once it is lost."""
    delay = min(0.05, ttl / 30)
    while True:
        try:
            return await rt.store.renew_lease(session_id, holder, ttl)
        except Exception as exc:
            left = renewed + ttl - time.monotonic()
            if left <= delay:
                log.warning("lease renewal of %s kept failing: %s", session_id, exc)
                return False
            log.info("lease renewal of %s failed (%s); retrying", session_id, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, ttl / 6)
