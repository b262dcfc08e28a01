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
from typing import TYPE_CHECKING

from agentkit.engine.budget_timeout import expire_budget_approvals
from agentkit.engine.lifecycle import recover_session
from agentkit.errors import InvalidId, SessionNotFound
from agentkit.sessions import SessionStatus

if TYPE_CHECKING:
    from agentkit.engine.runtime import AgentRuntime

log = logging.getLogger("agentkit.engine.sweeper")


async def sweep(rt: AgentRuntime, *, idle_for: float | None = None) -> int:
    """One pass over every session; returns how many turns were dispatched or failed.

    `idle_for` defaults to the runtime's lease TTL."""
    quiet = rt.lease_ttl if idle_for is None else idle_for
    acted = 0
    cursor: str | None = None
    while True:
        page = await rt.store.list_sessions(None, limit=100, cursor=cursor)
        for record in page.items:
            status = await rt.session_status(record.id)
            if status not in (SessionStatus.RUNNING, SessionStatus.AWAITING_APPROVAL):
                continue
            try:
                if status == SessionStatus.AWAITING_APPROVAL:
                    acted += await expire_budget_approvals(rt, record)
                    continue
                acted += await recover_session(rt, record, idle_for=quiet)
            except (SessionNotFound, InvalidId):
                continue  # deleted meanwhile
            except Exception:  # one bad session must not stop the sweep of the others
                log.exception("sweeping session %s failed", record.id)
        cursor = page.cursor
        if cursor is None:
            return acted


async def sweep_forever(rt: AgentRuntime, interval: float) -> None:
    """Sweep every `interval` seconds until cancelled."""
    while True:
        await asyncio.sleep(interval)
        try:
            acted = await sweep(rt)
        except Exception:
            log.exception("the sweep failed; trying again in %gs", interval)
            continue
        if acted:
            log.info("sweeper: %d stranded turn(s) dispatched or failed", acted)
