"""Pending approvals, folded from a session's events (nothing else remembers them), and
the rules a decision is bound by: the digest of the call's arguments, the denied result."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from agentkit.engine.service import PendingApproval
from agentkit.events import Event, EventType

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


def was_requested(events: Iterable[Event], call_id: str) -> bool:
    """Whether an approval was ever asked for `call_id`."""
    return any(
        ev.type == EventType.ACTION_APPROVAL_REQUESTED and ev.data.get("callId") == call_id
        for ev in events
    )


def was_resolved(events: Iterable[Event], call_id: str) -> bool:
    """Whether a decision for `call_id` is already on record."""
    return any(
        ev.type == EventType.ACTION_APPROVAL_RESOLVED and ev.data.get("callId") == call_id
        for ev in events
    )
