"""Approvals and direct tool calls as the runtime offers them, and recording a decision on
a pending approval, then resuming what it parked.

`approvals`, `resolve_approval` and `call_tool` are bound on `AgentRuntime` as they are
(the runtime is their `Decider`), so their public signatures are written once, here.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from agentkit.engine.folds.pending_approvals import (
    arguments_digest,
    pending_approvals,
    was_requested,
    was_resolved,
)
from agentkit.engine.pausing import refuse_paused
from agentkit.engine.ports import SessionPorts
from agentkit.engine.service import Decision, PendingApproval, ToolCallOutcome
from agentkit.engine.session_reads import SessionReads
from agentkit.errors import BadRequest, Conflict, NotFound
from agentkit.events import ActionApprovalResolved, draft
from agentkit.sessions import Principal, SessionRecord

if TYPE_CHECKING:
    from agentkit.engine.tools.calls import ToolEntry
    from agentkit.engine.tools.direct import DirectCalls

RunDecided = Callable[[SessionRecord, str, str, Mapping[str, Any], str, str], Awaitable[None]]
"""Runs a parked direct call once decided: (record, call id, tool, arguments, decision,
lease holder); `DirectCalls.run_decided`."""


class Decider(Protocol):
    """What approvals and direct calls take from the runtime."""

    @property
    def ports(self) -> SessionPorts: ...

    @property
    def reads(self) -> SessionReads: ...

    @property
    def tools(self) -> dict[str, ToolEntry]: ...

    @property
    def direct(self) -> DirectCalls: ...


async def approvals(rt: Decider, session_id: str, *, principal: Principal) -> list[PendingApproval]:
    """The session's pending approvals (the owner's only)."""
    return await rt.reads.approvals(session_id, principal)


async def resolve_approval(
    rt: Decider, session_id: str, call_id: str, decision: Decision, *, principal: Principal
) -> None:
    """Record the decision (bound to the call's arguments) and resume the turn."""
    if decision not in ("approve", "deny"):
        raise BadRequest("decision must be 'approve' or 'deny'")
    record = await rt.reads.owned(session_id, principal)
    events = await rt.ports.store.read(record.id)
    refuse_paused(events)
    if decision == "approve":
        from agentkit.engine.approval_schema import check_still_valid

        check_still_valid(events, call_id, rt.tools.get)
    await record_decision(rt.ports, record, call_id, decision, principal, run_decided_by(rt))


async def call_tool(
    rt: Decider,
    tool_name: str,
    tool_input: Mapping[str, Any],
    *,
    principal: Principal,
    session_id: str | None = None,
) -> ToolCallOutcome:
    """Run a server tool with no model turn (recorded on the session when given)."""
    record = None if session_id is None else await rt.reads.owned(session_id, principal)
    return await rt.direct.call(tool_name, tool_input, record)


def run_decided_by(rt: Decider) -> RunDecided:
    """`rt.direct.run_decided`, with the direct calls built only when a parked direct call
    is decided (most decisions resume a turn instead)."""

    async def run(*args: Any) -> None:
        await rt.direct.run_decided(*args)

    return run


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


__all__ = [
    "Decider",
    "RunDecided",
    "approvals",
    "call_tool",
    "record_decision",
    "resolve_approval",
    "run_decided_by",
]
