"""Recovering turns after a restart: open turns whose process is gone are dispatched
again (never started, or decided) or ended as lost; parked ones stay resolvable.

Only the events and the lease are looked at, so this works the same whether the turn ran
in this process, another one, or a process that is gone.
"""

from __future__ import annotations

import secrets
import time
from datetime import datetime

from agentkit.engine.folds.conversation import fold_turn, open_turns
from agentkit.engine.on_busy import drain_queue, pending_queue
from agentkit.engine.ports import SessionPorts
from agentkit.engine.turn.deadline import find_marker
from agentkit.engine.turn.ending import LOST_TURN, fail_turn
from agentkit.engine.turn.lease import LeaseKeeper
from agentkit.events import Event
from agentkit.sessions import SessionRecord


async def recover_all(ports: SessionPorts) -> None:
    """Look at every session once (see `recover_session`)."""
    cursor: str | None = None
    while True:
        page = await ports.store.list_sessions(None, limit=100, cursor=cursor)
        for record in page.items:
            await recover_session(ports, record)
        cursor = page.cursor
        if cursor is None:
            return


async def recover_session(
    ports: SessionPorts, record: SessionRecord, *, idle_for: float | None = None
) -> int:
    """Open turns whose lease is free: parked ones stay, decided or never-started ones are
    dispatched, and the rest (their process died) end as `turn.failed`, tools not re-run.

    With `idle_for` (the sweeper), only turns whose last event is older than that many
    seconds are touched: a turn just accepted may still be on its way to a worker.
    Returns how many turns were dispatched or failed."""
    events = await ports.store.read(record.id)
    turns = open_turns(events)
    if not turns and pending_queue(events):
        await drain_queue(ports, record.id)  # the process died between a turn and its queue
        return 1
    if not turns or await ports.store.get_lease(record.id) is not None:
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
            await ports.dispatcher.dispatch(record.id, turn_id)
            continue
        if await find_marker(ports.store, record.id, state) is not None:
            # Stopped on purpose to carry on in a new invocation (whose dispatch was lost).
            await ports.dispatcher.dispatch(record.id, turn_id)
            continue
        await fail_lost(ports, record, turn_id, LOST_TURN)
    return acted


async def fail_lost(ports: SessionPorts, record: SessionRecord, turn_id: str, reason: str) -> bool:
    """End a turn whose worker is gone as `turn.failed`, its calls in doubt settled first
    (reconciled, run again when idempotent, or reported unknown: `engine.tools.reconcile`).

    Under a lease with a holder of its own, the turn is read again: of two deliveries of
    the same failure (or a sweeper and a retry), only one finds it still open. Once it is
    failed, a message queued behind it becomes the next turn: the dead turn's runner never
    drained the queue, and nothing else would until the next sweep."""
    holder = f"lost:{turn_id}:{secrets.token_hex(6)}"
    if not await ports.store.acquire_lease(record.id, holder, ports.lease_ttl):
        return False  # a live worker holds the session; it will finish or expire
    try:
        state = fold_turn(await ports.store.read(record.id), turn_id)
        if state.terminal or state.parked or not state.received:
            return False
        # Settling may run a tool again: the lease is kept for as long as that takes.
        keeper = LeaseKeeper(ports.store, record.id, holder, ports.lease_ttl, on_lost=lambda: None)
        try:
            settled = await ports.settle_in_doubt(record, state)
        finally:
            await keeper.stop()
        await fail_turn(ports.recorder(record, turn_id, holder), state, reason, settled)
    finally:
        await ports.store.release_lease(record.id, holder)
    await drain_queue(ports, record.id)
    return True


def _idle(events: list[Event], turn_id: str, seconds: float) -> bool:
    last = next((e for e in reversed(events) if e.turn_id == turn_id), None)
    if last is None:
        return True
    try:
        at = datetime.fromisoformat(last.at).timestamp()
    except ValueError:
        return True
    return time.time() - at >= seconds
