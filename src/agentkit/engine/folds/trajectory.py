"""The trajectory of a session, folded from its events: tool calls, the reply, usage.

`agentkit run` and `agentkit trajectory` print this shape, so a trace written by one run
and any session's `events.ndjson` read the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentkit.costs import add_costs
from agentkit.engine.folds.pending_approvals import pending_approvals
from agentkit.events import Event, EventType, Usage
from agentkit.sessions import fold_status


def trajectory(events: Iterable[Event]) -> dict[str, Any]:
    """Pair `actions.requested` with `action.result`, take the last reply, sum the usage."""
    events = list(events)
    calls: dict[str, dict[str, Any]] = {}
    reply: str | None = None
    error: str | None = None
    usage = Usage()
    model: str | None = None
    turns = 0
    cost: float | None = 0.0  # None once a turn's price was unknown
    abs_: dict[str, str] = {}
    for ev in events:
        t, d = ev.type, ev.data
        if t == EventType.TURN_STARTED:
            turns += 1
            model = d.get("model") or model
        elif t == EventType.ACTIONS_REQUESTED:
            for a in d.get("actions") or []:
                calls[str(a["callId"])] = {
                    "callId": a["callId"],
                    "toolName": a["toolName"],
                    "arguments": a.get("arguments") or {},
                    "turnId": ev.turn_id,
                }
        elif t == EventType.ACTION_RESULT:
            entry = calls.setdefault(
                str(d.get("callId")), {"callId": d.get("callId"), "toolName": d.get("toolName")}
            )
            entry.update(
                isError=bool(d.get("isError")),
                result=d.get("result"),
                error=d.get("error"),
                durationMs=d.get("durationMs"),
            )
        elif t == EventType.AB_ASSIGNED:
            abs_.setdefault(str(d.get("experiment")), str(d.get("variant")))
        elif t in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            if isinstance(d.get("usage"), dict):
                usage = usage + Usage.model_validate(d["usage"])
            raw_cost = d.get("costUsd")
            cost = add_costs(cost, float(raw_cost) if isinstance(raw_cost, int | float) else None)
            reply, error = (
                (d.get("result"), None) if t == EventType.TURN_COMPLETED else (None, d.get("error"))
            )
    out: dict[str, Any] = {
        "sessionId": events[0].session_id if events else None,
        "status": fold_status(events).value,
        "model": model,
        "turns": turns,
        "toolCalls": list(calls.values()),
        "approvals": [
            {"callId": p.call_id, "toolName": p.tool_name, "arguments": p.arguments}
            for p in pending_approvals(events)
        ],
        "reply": reply,
        "error": error,
        "usage": usage.model_dump(by_alias=True),
    }
    if cost is not None and turns:
        out["costUsd"] = cost  # absent when a price was unknown (never a false zero)
    if abs_:
        out["abs"] = abs_
    return out


def read_events_file(path: Path) -> list[Event]:
    """Events from an NDJSON file; a line that is not an event raises `ValueError` naming it."""
    out: list[Event] = []
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                out.append(Event.from_json(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not an event ({exc})") from None
    return out


def dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)
