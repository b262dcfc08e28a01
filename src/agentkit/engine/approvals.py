"""Recording a decision on a pending approval, then resuming what it parked."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agentkit.engine.folds.pending_approvals import (
    arguments_digest,
    pending_approvals,
    was_requested,
    was_resolved,
)
from agentkit.engine.ports import SessionPorts
from agentkit.engine.service import Decision
from agentkit.errors import Conflict, NotFound
from agentkit.events import ActionApprovalResolved, draft
from agentkit.sessions import Principal, SessionRecord

RunDecided = Callable[[SessionRecord, str, str, Mapping[str, Any], str, str], Awaitable[None]]
"""Runs a parked direct call once decided: (record, call id, tool, arguments, decision,
lease holder); `DirectCalls.run_decided`."""


async def record_decision(
    ports: SessionPorts,
    record: SessionRecord,
    call_id: str,
    decision: Decision,
    principal: Principal,
    run_decided: RunDecided,
) -> None:
    """Record the decision (bound to the call's arguments), then dispatch the parked turn.

    The session's lease is held while the pending call is looked up and the decision
    recorded, so two decisions on one call cannot both land.
    """
    holder = "approval:" + secrets.token_hex(6)
    if not await ports.store.acquire_lease(record.id, holder, ports.lease_ttl):
        raise Conflict("the session is busy", code="session_busy")
    try:
        events = await ports.store.read(record.id)
        found = next((p for p in pending_approvals(events) if p.call_id == call_id), None)
        if found is None:
            if was_resolved(events, call_id):
                raise Conflict("this approval was already resolved", code="already_resolved")
            if was_requested(events, call_id):
                # Its turn ended first (a follow-up or stop won the race): the call never ran.
                raise Conflict(
                    "the turn was interrupted before this approval; the call did not run",
                    code="turn_interrupted",
                )
            raise NotFound(f"no pending approval {call_id!r}")
        resolved = ActionApprovalResolved(
            call_id=call_id,
            decision=decision,
            principal=principal.id,
            argumentsDigest=arguments_digest(found.arguments),
        )
        await ports.record(record, [draft(resolved, turn_id=found.turn_id)])
        if found.turn_id is None:
            # A parked direct tool call: no turn to resume, so it runs here, under the lease.
            await run_decided(record, call_id, found.tool_name, found.arguments, decision, holder)
    finally:
        await ports.store.release_lease(record.id, holder)
    if found.turn_id is not None:
        await ports.dispatcher.dispatch(record.id, found.turn_id)
