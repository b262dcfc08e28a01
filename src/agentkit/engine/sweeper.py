"""The sweeper: no session stays "running" after its turn's worker is gone.

A turn can be left open with no one working on it: the process died, a dispatch was lost
(an invoke error after the message was recorded), or a worker gave up. Every so often the
sweeper looks at running sessions whose lease is free and whose open turn has been quiet
for longer than the lease TTL: a turn that never started (or whose approvals were decided)
is dispatched again, one that started is ended as `turn.failed`, its open calls in doubt
and never re-run. A turn parked on a budget approval nobody answered in time is denied
(`engine/budget_timeout.py`). `agentkit serve` runs the sweeper on a timer; on AWS,
SchedulerFunction runs it on a rate schedule.
"""

# Coverage is below 80%: the sweep's recovery is tested; its guards (a session deleted
# mid-sweep, one session's failure logged while the others are swept, a failed pass retried
# by `sweep_forever`) are not driven by tests of their own.

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from agentkit.engine.ports import SessionPorts
from agentkit.engine.recovery import recover_session
from agentkit.errors import InvalidId, SessionNotFound
from agentkit.sessions import SessionRecord, SessionStatus

log = logging.getLogger("agentkit.engine.sweeper")


async def sweep(
    ports: SessionPorts,
    status_of: Callable[[str], Awaitable[SessionStatus | None]],
    expire: Callable[[SessionRecord], Awaitable[int]],
    *,
    idle_for: float | None = None,
) -> int:
    """One pass over every session; returns how many turns were dispatched or failed.

    `status_of` folds a session's status; `expire` denies its budget approvals that waited
    too long. `idle_for` defaults to the lease TTL."""
    quiet = ports.lease_ttl if idle_for is None else idle_for
    acted = 0
    cursor: str | None = None
    while True:
        page = await ports.store.list_sessions(None, limit=100, cursor=cursor)
        for record in page.items:
            status = await status_of(record.id)
            if status not in (SessionStatus.RUNNING, SessionStatus.AWAITING_APPROVAL):
                continue
            try:
                if status == SessionStatus.AWAITING_APPROVAL:
                    acted += await expire(record)
                    continue
                acted += await recover_session(ports, record, idle_for=quiet)
            except (SessionNotFound, InvalidId):
                continue  # deleted meanwhile
            except Exception:  # one bad session must not stop the sweep of the others
                log.exception("sweeping session %s failed", record.id)
        cursor = page.cursor
        if cursor is None:
            return acted


async def sweep_forever(sweep: Callable[[], Awaitable[int]], interval: float) -> None:
    """Run `sweep` (one pass) every `interval` seconds until cancelled."""
    while True:
        await asyncio.sleep(interval)
        try:
            acted = await sweep()
        except Exception:
            log.exception("the sweep failed; trying again in %gs", interval)
            continue
        if acted:
            log.info("sweeper: %d stranded turn(s) dispatched or failed", acted)
