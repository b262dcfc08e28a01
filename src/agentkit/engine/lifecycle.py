"""Settling a busy session before a new message, and recovering turns after a restart.

Both only look at the events and the lease, so they work the same whether the turn ran in
this process, another one, or a process that is gone.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import TYPE_CHECKING

from agentkit.engine.busy import drain_queue, pending_queue
from agentkit.engine.fold import fold_turn, open_turns
from agentkit.engine.turns import fail_turn
from agentkit.errors import Conflict
from agentkit.events import Event
from agentkit.sessions import SessionRecord, SessionStatus, fold_status

if TYPE_CHECKING:
    from agentkit.engine.runtime import AgentRuntime

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
    status = fold_status(events)
    if status == SessionStatus.AWAITING_APPROVAL:
        await _still_current(rt, record, token_hash)
        await abandon_parked(rt, record, events)
        return
    lease = await store.get_lease(record.id)
    if status != SessionStatus.RUNNING and lease is None:
        return
    await _still_current(rt, record, token_hash)
    # Nothing yields between the check and the interrupt's local stop and stream cancel, so
    # no follow-up can be accepted in between in this process. (The store's flag, for a
    # turn running elsewhere, is one write later; a winner accepted within that write
    # would still see it.)
    await rt.interrupt(record.id)
    deadline = time.monotonic() + rt.settle_timeout
    while time.monotonic() < deadline:
        await asyncio.sleep(SETTLE_POLL)
        events = await store.read(record.id)
        if (
            fold_status(events) != SessionStatus.RUNNING
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


async def abandon_parked(rt: AgentRuntime, record: SessionRecord, events: list[Event]) -> None:
    """End a turn parked on approvals as interrupted (its parked calls never ran)."""
    holder = "settle:" + secrets.token_hex(6)
    if not await rt.store.acquire_lease(record.id, holder, rt.lease_ttl):
        raise Conflict("the session is busy", code="session_busy")
    try:
        for turn_id in open_turns(events):
            state = fold_turn(events, turn_id)
            if state.parked or state.resumable:
                await fail_turn(rt.recorder(record, turn_id), state, "turn interrupted")
    finally:
        await rt.store.release_lease(record.id, holder)


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


async def recover_session(rt: AgentRuntime, record: SessionRecord) -> None:
    """Open turns whose lease is free: parked ones stay, decided or never-started ones are
    dispatched, and the rest (their process died) end as `turn.failed`, tools not re-run."""
    events = await rt.store.read(record.id)
    turns = open_turns(events)
    if not turns and pending_queue(events):
        await drain_queue(rt, record.id)  # the process died between a turn and its queue
        return
    if not turns or await rt.store.get_lease(record.id) is not None:
        return
    for turn_id in turns:
        state = fold_turn(events, turn_id)
        if state.parked:
            continue
        if state.resumable or not state.started:
            await rt.dispatcher.dispatch(record.id, turn_id)
            continue
        holder = "recover:" + secrets.token_hex(6)
        if not await rt.store.acquire_lease(record.id, holder, rt.lease_ttl):
            return
        try:
            await fail_turn(rt.recorder(record, turn_id), state, LOST_TURN)
        finally:
            await rt.store.release_lease(record.id, holder)
