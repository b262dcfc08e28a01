"""The A/B fold: a session's events into its assignments and one sample per finished turn.

A sample is what one turn did: completed or failed, steps, tool calls and tool errors,
tokens, cost, latency from `message.received` to the turn's terminal event, approvals asked
and denied. Everything comes from the durable stream; nothing else is stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentkit.engine.folds.forked import copied_through_of
from agentkit.events import Event, EventType

# The per-turn metrics, as named on the wire (and in guardrails).
METRICS = (
    "completed",
    "failed",
    "steps",
    "toolCalls",
    "toolErrors",
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "costUsd",
    "latencyMs",
    "approvalsRequested",
    "approvalsDenied",
    "deniedApproval",
)
# Friendlier names a guardrail may use for a metric's mean.
ALIASES = {
    "failureRate": "failed",
    "completionRate": "completed",
    "deniedApprovalRate": "deniedApproval",
    "costPerTurn": "costUsd",
}


@dataclass(slots=True)
class TurnSample:
    """One finished turn of an enrolled session."""

    session_id: str
    turn_id: str
    assignments: dict[str, str]
    at: str
    metrics: dict[str, float] = field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "assignments": dict(self.assignments),
            "at": self.at,
            "metrics": dict(self.metrics),
        }


@dataclass(slots=True)
class Pause:
    experiment: str
    variant: str
    reason: str
    at: str


@dataclass(slots=True)
class SessionFold:
    """What one session contributes to the experiments."""

    session_id: str
    principal: str | None = None
    started_at: str | None = None
    assignments: dict[str, str] = field(default_factory=dict)
    samples: list[TurnSample] = field(default_factory=list)
    pauses: list[Pause] = field(default_factory=list)
    next_index: int = 0
    copied_through: int = -1  # a fork's copy of its original: sampled there, not here


@dataclass(slots=True)
class _Open:
    received_at: str | None = None
    steps: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    approvals: int = 0
    denied: int = 0


def _ms_between(start: str | None, end: str) -> float | None:
    if start is None:
        return None
    try:
        a = datetime.fromisoformat(start.replace("Z", "+00:00"))
        b = datetime.fromisoformat(end.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, (b - a).total_seconds() * 1000.0)


class SessionFolder:
    """Folds one session's events incrementally (`add` them in index order, any batches)."""

    def __init__(self, session_id: str) -> None:
        self.fold = SessionFold(session_id)
        self._open: dict[str, _Open] = {}

    def add_all(self, events: Iterable[Event]) -> list[TurnSample]:
        """Add events; returns the samples of turns that finished among them."""
        out: list[TurnSample] = []
        for ev in events:
            sample = self.add(ev)
            if sample is not None:
                out.append(sample)
        return out

    def add(self, ev: Event) -> TurnSample | None:  # noqa: C901 - one branch per event type
        f = self.fold
        if ev.index < f.next_index:
            return None  # already folded (at-least-once delivery)
        f.next_index = ev.index + 1
        t, d = ev.type, ev.data
        if t == EventType.SESSION_FORKED and ev.index == 0:
            f.copied_through = copied_through_of(ev)
            return None
        if t == EventType.SESSION_STARTED:
            f.principal, f.started_at = d.get("principal"), ev.at
            return None
        if t == EventType.AB_ASSIGNED:
            f.assignments.setdefault(str(d.get("experiment")), str(d.get("variant")))
            return None
        if t == EventType.AB_PAUSED:
            f.pauses.append(
                Pause(str(d.get("experiment")), str(d.get("variant")), str(d.get("reason")), ev.at)
            )
            return None
        if ev.turn_id is None:
            return None
        turn = self._open.setdefault(ev.turn_id, _Open())
        if t == EventType.MESSAGE_RECEIVED:
            turn.received_at = ev.at
        elif t == EventType.STEP_COMPLETED:
            turn.steps += 1
        elif t == EventType.ACTION_RESULT:
            turn.tool_calls += 1
            turn.tool_errors += bool(d.get("isError"))
        elif t == EventType.ACTION_APPROVAL_REQUESTED:
            turn.approvals += 1
        elif t == EventType.ACTION_APPROVAL_RESOLVED:
            turn.denied += d.get("decision") == "deny"
        elif t in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            self._open.pop(ev.turn_id, None)
            if not f.assignments or ev.index <= f.copied_through:
                return None
            sample = _sample(f, ev, turn)
            f.samples.append(sample)
            return sample
        return None


def _sample(f: SessionFold, ev: Event, turn: _Open) -> TurnSample:
    d = ev.data
    raw = d.get("usage")
    usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
    completed = ev.type == EventType.TURN_COMPLETED
    metrics: dict[str, float] = {
        "completed": float(completed),
        "failed": float(not completed),
        "steps": float(turn.steps),
        "toolCalls": float(turn.tool_calls),
        "toolErrors": float(turn.tool_errors),
        "inputTokens": float(usage.get("inputTokens", 0)),
        "outputTokens": float(usage.get("outputTokens", 0)),
        "cacheReadTokens": float(usage.get("cacheReadTokens", 0)),
        "cacheWriteTokens": float(usage.get("cacheWriteTokens", 0)),
        "approvalsRequested": float(turn.approvals),
        "approvalsDenied": float(turn.denied),
        "deniedApproval": float(turn.denied > 0),
    }
    cost = d.get("costUsd")
    if isinstance(cost, int | float):
        metrics["costUsd"] = float(cost)
    latency = _ms_between(turn.received_at, ev.at)
    if latency is not None:
        metrics["latencyMs"] = latency
    return TurnSample(f.session_id, str(ev.turn_id), dict(f.assignments), ev.at, metrics)


def fold_session(session_id: str, events: Iterable[Event]) -> SessionFold:
    """The whole fold of one session's events."""
    folder = SessionFolder(session_id)
    folder.add_all(events)
    return folder.fold


__all__ = [
    "ALIASES",
    "METRICS",
    "Pause",
    "SessionFold",
    "SessionFolder",
    "TurnSample",
    "fold_session",
]
