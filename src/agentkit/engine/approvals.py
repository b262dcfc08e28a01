"""Pending approvals, folded from a session's events (nothing else remembers them), and
recording a decision on one."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from agentkit.engine.service import Decision, PendingApproval
from agentkit.errors import Conflict, NotFound
from agentkit.events import ActionApprovalResolved, Event, EventType, draft
from agentkit.sessions import Principal, SessionRecord

if TYPE_CHECKING:
    from agentkit.engine.runtime import AgentRuntime

# The result a denied call records, whether the model or a direct call asked for it.
DENIED = "the user denied this tool call; it did not run"


def arguments_digest(arguments: dict[str, Any]) -> str:
    """A stable digest of a call's arguments, recorded with the decision."""
    raw = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def pending_approvals(events: Iterable[Event]) -> list[PendingApproval]:
    """Approval requests with no decision, no result and no terminal turn event after them."""
    pending: dict[str, PendingApproval] = {}
    for ev in events:
        t, d = ev.type, ev.data
        if t == EventType.ACTION_APPROVAL_REQUESTED:
            cid = str(d.get("callId"))
            pending[cid] = PendingApproval(
                call_id=cid,
                tool_name=str(d.get("toolName")),
                arguments=dict(d.get("arguments") or {}),
                turn_id=ev.turn_id,
                requested_at=ev.at,
            )
        elif t in (EventType.ACTION_APPROVAL_RESOLVED, EventType.ACTION_RESULT):
            pending.pop(str(d.get("callId")), None)
        elif t in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            pending = {k: v for k, v in pending.items() if v.turn_id != ev.turn_id}
    return list(pending.values())


def was_resolved(events: Iterable[Event], call_id: str) -> bool:
    """Whether a decision for `call_id` is already on record."""
    return any(
        ev.type == EventType.ACTION_APPROVAL_RESOLVED and ev.data.get("callId") == call_id
        for ev in events
    )


def was_requested(events: Iterable[Event], call_id: str) -> bool:
    """Whether an approval was ever asked for `call_id`."""
    return any(
        ev.type == EventType.ACTION_APPROVAL_REQUESTED and ev.data.get("callId") == call_id
        for ev in events
    )


async def record_decision(
    rt: AgentRuntime,
    record: SessionRecord,
    call_id: str,
    decision: Decision,
    principal: Principal,
) -> None:
    """Record the decision (bound to the call's arguments), then dispatch the parked turn.

    The session's lease is held while the pending call is looked up and the decision
    recorded, so two decisions on one call cannot both land.
    """
    holder = "approval:" + secrets.token_hex(6)
    if not await rt.store.acquire_lease(record.id, holder, rt.lease_ttl):
        raise Conflict("the session is busy", code="session_busy")
    try:
        events = await rt.store.read(record.id)
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
        await rt.record(record, [draft(resolved, turn_id=found.turn_id)])
        if found.turn_id is None:
            # A parked direct tool call: no turn to resume, so it runs here, under the lease.
            await rt.direct.run_decided(
                record, call_id, found.tool_name, found.arguments, decision, holder
            )
    finally:
        await rt.store.release_lease(record.id, holder)
    if found.turn_id is not None:
        await rt.dispatcher.dispatch(record.id, found.turn_id)
