"""Settling a busy session before a new message: interrupt what runs, wait (bounded) for
it to end, or end a turn parked on approvals; and undoing a follow-up that failed.

Only the events and the lease are looked at, so this works the same whether the turn ran
in this process, another one, or a process that is gone.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time

from agentkit.engine.folds.conversation import fold_turn, open_turns
from agentkit.engine.ports import SessionPorts
from agentkit.engine.turn.ending import fail_turn
from agentkit.errors import Conflict
from agentkit.events import Event
from agentkit.sessions import SessionRecord, SessionStatus, fold_status, fold_status_recent
from agentkit.store.base import Store

log = logging.getLogger("agentkit.engine.lifecycle")
SETTLE_POLL = 0.02


async def settle(
    ports: SessionPorts,
    record: SessionRecord,
    settle_timeout: float,
    *,
    token_hash: str | None = None,
    events: list[Event] | None = None,
) -> None:
    """Interrupt whatever runs in the session and wait (bounded) for it to end.

    `events` are the session's events when the caller has just read them (a follow-up's
    `refuse_message`): they are not read again. What is decided from them is checked
    against the store before it acts (the lease, the conditional interrupt, the reads
    under the lease and while waiting), as it would be after a fresh read.

    A turn parked on approvals is ended at once; a running one is interrupted and waited
    for up to `settle_timeout` seconds, then `Conflict(session_busy)`.

    With `token_hash` (a follow-up's presented token), nothing is ended or interrupted
    unless the session's token is still that one, checked just before: a follow-up with
    the same token accepted meanwhile owns the turn now running, and this caller has lost
    (`Conflict(session_busy)`, as its token rotation would say).
    """
    store = ports.store
    if events is None:
        events = await store.read(record.id)
    status = fold_status_recent(events)
    if status == SessionStatus.AWAITING_APPROVAL:
        await _still_current(ports, record, token_hash)
        decided = await abandon_parked(ports, record, events)
        if not decided:
            return
        # A decision landed meanwhile: that turn resumes and runs its approved calls, and
        # is interrupted after them like any running turn. Dispatching it again is safe (a
        # second dispatch of a turn does nothing) and sure to start it.
        for turn_id in decided:
            await ports.dispatcher.dispatch(record.id, turn_id)
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
        ports.turns.stop(record.id, target)
    else:
        await _still_current(ports, record, token_hash)
        await ports.interrupt(record.id, target)
    # By default this covers the running tools' stop grace, after which they are cancelled
    # and the turn ends within about a second (see `TurnRunner.preemptible`).
    deadline = time.monotonic() + settle_timeout
    while time.monotonic() < deadline:
        await asyncio.sleep(SETTLE_POLL)
        events = await store.read(record.id)
        if (
            fold_status_recent(events) != SessionStatus.RUNNING
            and await store.get_lease(record.id) is None
        ):
            return
    raise Conflict("the running turn did not stop in time", code="session_busy")


async def _still_current(
    ports: SessionPorts, record: SessionRecord, token_hash: str | None
) -> None:
    if token_hash is None:
        return
    current = await ports.store.get_session(record.id)
    if current is None or current.token_hash != token_hash:
        raise Conflict("another follow-up was accepted first", code="session_busy")


async def abandon_parked(
    ports: SessionPorts, record: SessionRecord, events: list[Event]
) -> list[str]:
    """End a turn parked on approvals as interrupted (its parked calls never ran).

    A turn whose every approval was decided is not ended: an approval answered `200`
    means its call runs (docs/engine.md). Returns those turns, for the caller to interrupt
    once their approved calls have started."""
    holder = "settle:" + secrets.token_hex(6)
    if not await ports.store.acquire_lease(record.id, holder, ports.lease_ttl):
        raise Conflict("the session is busy", code="session_busy")
    decided: list[str] = []
    try:
        # Read again under the lease: a decision may have landed since `events` was read.
        events = await ports.store.read(record.id)
        for turn_id in open_turns(events):
            state = fold_turn(events, turn_id)
            if state.resumable:
                decided.append(turn_id)
            elif state.parked:
                await fail_turn(ports.recorder(record, turn_id), state, "turn interrupted")
    finally:
        await ports.store.release_lease(record.id, holder)
    return decided


async def stop_turn(ports: SessionPorts, record: SessionRecord) -> bool:
    """Interrupt the session's running (or parked) turn; False when nothing was running."""
    events = await ports.store.read(record.id)
    status = fold_status(events)
    if status == SessionStatus.AWAITING_APPROVAL:
        # A turn decided meanwhile resumes and runs its approved calls, then stops.
        for turn_id in await abandon_parked(ports, record, events):
            await ports.interrupt(record.id, turn_id)
        return True
    if status != SessionStatus.RUNNING and await ports.store.get_lease(record.id) is None:
        return False
    turns = open_turns(events)
    await ports.interrupt(record.id, turns[-1] if turns else None)
    return True


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
    ports: SessionPorts, record: SessionRecord, turn_id: str, exc: BaseException
) -> None:
    """Record `turn.failed` for a turn whose dispatch failed (best effort)."""
    try:
        state = fold_turn(await ports.store.read(record.id), turn_id)
        if not state.terminal:
            await fail_turn(
                ports.recorder(record, turn_id), state, f"could not start the turn: {exc}"
            )
    except Exception:
        log.exception("could not record the failed dispatch of %s", turn_id)
