"""Settling a busy session before a new message, and recovering turns after a restart.

Both only look at the events and the lease, so they work the same whether the turn ran in
this process, another one, or a process that is gone.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from datetime import datetime
from typing import TYPE_CHECKING

from agentkit.engine.busy import drain_queue, pending_queue
from agentkit.engine.deadline import find_marker
from agentkit.engine.fold import fold_turn, open_turns
from agentkit.engine.turns import fail_turn
from agentkit.errors import Conflict
from agentkit.events import Event
from agentkit.sessions import SessionRecord, SessionStatus, fold_status_recent
from agentkit.store.base import Store

if TYPE_CHECKING:
    from agentkit.engine.runtime import AgentRuntime

log = logging.getLogger("agentkit.engine.lifecycle")
LOST_TURN = "turn lost: the process running it stopped before the turn finished"
SETTLE_POLL = 0.02


async def settle(rt: AgentRuntime, record: SessionRecord, *, token_hash: str | None = None) -> None:
    """Interrupt whatever runs in the session and wait (bounded) for it to end.

    A turn parked on approvals is ended at once; a running one is interrupted and waited
    for up to `rt.settle_timeout` seconds, then `Conflict(session_busy)`.

    With `token_hash` (a follow-up's presented token), nothing is ended or interrupted
    unless the session's token is still that one, checked just before: a follow-up with
    the same token accepted meanwhile owns the turn now running, and this caller has lost
    (`Conflict(session_busy)`, as its token rotation would say).
    """
    store = rt.store
    events = await store.read(record.id)
    status = fold_status_recent(events)
    if status == SessionStatus.AWAITING_APPROVAL:
        await _still_current(rt, record, token_hash)
        decided = await abandon_parked(rt, record, events)
        if not decided:
            return
        # A decision landed meanwhile: that turn resumes and runs its approved calls, and
        # is interrupted after them like any running turn. Dispatching it again is safe (a
        # second dispatch of a turn does nothing) and sure to start it.
        for turn_id in decided:
            await rt.dispatcher.dispatch(record.id, turn_id)
        events = await store.read(record.id)
        status = fold_status_recent(events)
    lease = await store.get_lease(record.id)
    if status != SessionStatus.RUNNING and lease is None:
        return
    turns = open_turns(events)
    target = turns[-1] if turns else None
    if token_hash is not None and target is not None:
        # One conditional write decides: it names the turn this caller saw and lands only
        # while the token is still the one it presented. A loser (another follow-up with
        # the same token was accepted) writes nothing, and a flag naming an older turn
        # never stops the winner's newer one.
        if not await store.request_interrupt(record.id, target, token_hash=token_hash):
            raise Conflict("another follow-up was accepted first", code="session_busy")
        rt.turns.stop(record.id, target)
    else:
        await _still_current(rt, record, token_hash)
        await rt.interrupt(record.id, target)
    # By default this covers the running tools' stop grace, after which they are cancelled
    # and the turn ends within about a second (see `TurnRunner.preemptible`).
    deadline = time.monotonic() + rt.settle_timeout
    while time.monotonic() < deadline:
        await asyncio.sleep(SETTLE_POLL)
        events = await store.read(record.id)
        if (
            fold_status_recent(events) != SessionStatus.RUNNING
            and await store.get_lease(record.id) is None
        ):
            return
    raise Conflict("the running turn did not stop in time", code="session_busy")


async def _still_current(rt: AgentRuntime, record: SessionRecord, token_hash: str | None) -> None:
    if token_hash is None:
        return
    current = await rt.store.get_session(record.id)
    if current is None or current.token_hash != token_hash:
        raise Conflict("another follow-up was accepted first", code="session_busy")


async def abandon_parked(rt: AgentRuntime, record: SessionRecord, events: list[Event]) -> list[str]:
    """End a turn parked on approvals as interrupted (its parked calls never ran).

    A turn whose every approval was decided is not ended: an approval answered `200`
    means its call runs (docs/engine.md). Returns those turns, for the caller to interrupt
    once their approved calls have started."""
    holder = "settle:" + secrets.token_hex(6)
    if not await rt.store.acquire_lease(record.id, holder, rt.lease_ttl):
        raise Conflict("the session is busy", code="session_busy")
    decided: list[str] = []
    try:
        # Read again under the lease: a decision may have landed since `events` was read.
        events = await rt.store.read(record.id)
        for turn_id in open_turns(events):
            state = fold_turn(events, turn_id)
            if state.resumable:
                decided.append(turn_id)
            elif state.parked:
                await fail_turn(rt.recorder(record, turn_id), state, "turn interrupted")
    finally:
        await rt.store.release_lease(record.id, holder)
    return decided


async def recover_all(rt: AgentRuntime) -> None:
    """Look at every session once (see `recover_session`)."""
    cursor: str | None = None
    while True:
        page = await rt.store.list_sessions(None, limit=100, cursor=cursor)
        for record in page.items:
            await recover_session(rt, record)
        cursor = page.cursor
        if cursor is None:
            return


async def recover_session(
    rt: AgentRuntime, record: SessionRecord, *, idle_for: float | None = None
) -> int:
    """Open turns whose lease is free: parked ones stay, decided or never-started ones are
    dispatched, and the rest (their process died) end as `turn.failed`, tools not re-run.

    With `idle_for` (the sweeper), only turns whose last event is older than that many
    seconds are touched: a turn just accepted may still be on its way to a worker.
    Returns how many turns were dispatched or failed."""
    events = await rt.store.read(record.id)
    turns = open_turns(events)
    if not turns and pending_queue(events):
        await drain_queue(rt, record.id)  # the process died between a turn and its queue
        return 1
    if not turns or await rt.store.get_lease(record.id) is not None:
        return 0
    acted = 0
    for turn_id in turns:
        state = fold_turn(events, turn_id)
        if state.parked:
            continue
        if idle_for is not None and not _idle(events, turn_id, idle_for):
            continue
        acted += 1
        if state.resumable or not state.started:
            await rt.dispatcher.dispatch(record.id, turn_id)
            continue
        if await find_marker(rt.store, record.id, state) is not None:
            # Stopped on purpose to carry on in a new invocation (whose dispatch was lost).
            await rt.dispatcher.dispatch(record.id, turn_id)
            continue
        await fail_lost(rt, record, turn_id, LOST_TURN)
    return acted


async def fail_lost(rt: AgentRuntime, record: SessionRecord, turn_id: str, reason: str) -> bool:
    """End a turn whose worker is gone as `turn.failed` (open calls in doubt, never re-run).

    Under a lease with a holder of its own, the turn is read again: of two deliveries of
    the same failure (or a sweeper and a retry), only one finds it still open."""
    holder = f"lost:{turn_id}:{secrets.token_hex(6)}"
    if not await rt.store.acquire_lease(record.id, holder, rt.lease_ttl):
        return False  # a live worker holds the session; it will finish or expire
    try:
        state = fold_turn(await rt.store.read(record.id), turn_id)
        if state.terminal or state.parked or not state.received:
            return False
        await fail_turn(rt.recorder(record, turn_id, holder), state, reason)
        return True
    finally:
        await rt.store.release_lease(record.id, holder)


def _idle(events: list[Event], turn_id: str, seconds: float) -> bool:
    last = next((e for e in reversed(events) if e.turn_id == turn_id), None)
    if last is None:
        return True
    try:
        at = datetime.fromisoformat(last.at).timestamp()
    except ValueError:
        return True
    return time.time() - at >= seconds


async def give_back_token(store: Store, session_id: str, new_hash: str, old_hash: str) -> None:
    """Compare-and-set the token back from `new_hash` to `old_hash` after a failed
    follow-up; a store hiccup gets a few tries (the token is otherwise stranded)."""
    for attempt in range(3):
        try:
            await store.rotate_token(session_id, new_hash, old_hash)
            return
        except Exception:
            if attempt == 2:
                log.exception("could not give the continuation token of %s back", session_id)
                return
            await asyncio.sleep(0.05 * 2**attempt)


async def end_undispatched(
    rt: AgentRuntime, record: SessionRecord, turn_id: str, exc: BaseException
) -> None:
    """Record `turn.failed` for a turn whose dispatch failed (best effort)."""
    try:
        state = fold_turn(await rt.store.read(record.id), turn_id)
        if not state.terminal:
            await fail_turn(rt.recorder(record, turn_id), state, f"could not start the turn: {exc}")
    except Exception:
        log.exception("could not record the failed dispatch of %s", turn_id)
