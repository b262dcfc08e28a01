"""OpenTelemetry metrics of what a session records: turns, tool errors, pending approvals.

Read from the events as the one recording path (`engine.turn.recorder.Recorder`) appends
them, so every way a turn ends or an approval closes is counted the same way, wherever it
is recorded: the turn loop, a stop, the recovery of a lost turn, the approval timeout, a
fork. Instruments made on the API's proxy meter record nothing until a host installs a
meter provider, and `record` returns at once while none is (see `telemetry.metrics_enabled`).

- `agentkit.turn.duration` (s): from `turn.started` to `turn.completed` or `turn.failed`,
  time parked on an approval included, by outcome. Counted where the recorder holds the
  turn's start (every turn the loop ends; a turn ended from outside its run, say a stop
  while parked, is counted in `agentkit.turn.cost` only).
- `agentkit.turn.cost` (USD): the priced cost of each ended turn (absent when the model's
  price is unknown).
- `agentkit.tool.errors` (`{error}`): tool calls whose result is an error, by tool and kind:
  `tool_error` (the tool failed), `denied`, `abandoned` (its turn ended before a decision),
  `in_doubt` (a crash left it unknown).
- `agentkit.approvals.pending` (`{approval}`, up-down): +1 when an approval is requested,
  -1 when it is decided (by a person or the approval timeout) or abandoned. Summed over
  every process, it is the number waiting now.

A fork's copy of history is not counted again, except the approvals it still waits on.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from opentelemetry import metrics

from agentkit.engine.folds.pending_approvals import DENIED
from agentkit.engine.telemetry import metrics_enabled
from agentkit.engine.turn.closed_calls import ABANDONED, IN_DOUBT
from agentkit.events import Event, EventType
from agentkit.sessions import SessionRecord
from agentkit.version import __version__

_meter = metrics.get_meter("agentkit", __version__)
_turn_duration = _meter.create_histogram(
    "agentkit.turn.duration",
    unit="s",
    description="Wall time of a turn, from its start to its end.",
    explicit_bucket_boundaries_advisory=[0.05 * 2**n for n in range(16)],
)
_turn_cost = _meter.create_histogram(
    "agentkit.turn.cost",
    unit="USD",
    description="Priced cost of a turn's model calls.",
    explicit_bucket_boundaries_advisory=[0.0001 * 2**n for n in range(16)],
)
_tool_errors = _meter.create_counter(
    "agentkit.tool.errors",
    unit="{error}",
    description="Tool calls that ended in an error result.",
)
_approvals_pending = _meter.create_up_down_counter(
    "agentkit.approvals.pending",
    unit="{approval}",
    description="Tool-call approvals requested and not yet decided.",
)

_TURN_ENDS: dict[str, str] = {
    EventType.TURN_COMPLETED: "completed",
    EventType.TURN_FAILED: "failed",
}
_ERROR_KINDS = {DENIED: "denied", ABANDONED: "abandoned"}


def record(session: SessionRecord, events: Sequence[Event], log: Sequence[Event] | None) -> None:
    """Count what `events`, just recorded in `session`, say. `log` is what the recorder
    holds of the session's events (where a turn's start is found), if anything."""
    if not metrics_enabled():
        return
    for ev in events:
        kind = ev.type
        if kind == EventType.ACTION_APPROVAL_REQUESTED:
            _approvals_pending.add(1)
        elif kind == EventType.ACTION_APPROVAL_RESOLVED:
            _approvals_pending.add(-1)
        elif kind == EventType.ACTION_RESULT:
            _result(ev)
        elif kind in _TURN_ENDS:
            _turn_end(session, ev, _TURN_ENDS[kind], events, log)


def approvals_carried(count: int) -> None:
    """A fork's copy, not counted itself, still waits on `count` approvals: each is
    pending in the fork now, and its decision there counts -1."""
    if count and metrics_enabled():
        _approvals_pending.add(count)


def _result(ev: Event) -> None:
    if not ev.data.get("isError"):
        return
    error = ev.data.get("error")
    kind = _error_kind(error) if isinstance(error, str) else "tool_error"
    _tool_errors.add(1, {"gen_ai.tool.name": str(ev.data.get("toolName")), "error.type": kind})
    if kind == "abandoned":  # an approval its turn ended before anyone decided it
        _approvals_pending.add(-1)


def _error_kind(error: str) -> str:
    # A reconciled call in doubt says why after the rule's own words.
    return "in_doubt" if error.startswith(IN_DOUBT) else _ERROR_KINDS.get(error, "tool_error")


def _turn_end(
    session: SessionRecord,
    ev: Event,
    outcome: str,
    events: Sequence[Event],
    log: Sequence[Event] | None,
) -> None:
    attributes = {"agentkit.turn.outcome": outcome, "agentkit.channel": session.channel_id}
    cost = ev.data.get("costUsd")
    if isinstance(cost, int | float):
        _turn_cost.record(float(cost), attributes)
    started = _started_at(ev.turn_id, events, log)
    if started is not None:
        seconds = _seconds(ev.at) - started
        if seconds >= 0:
            _turn_duration.record(seconds, attributes)


def _started_at(
    turn_id: str | None, events: Sequence[Event], log: Sequence[Event] | None
) -> float | None:
    if turn_id is None:
        return None
    # The log ends with the events just recorded; a turn's start is near its end.
    for ev in reversed(log if log is not None else events):
        if ev.type == EventType.TURN_STARTED and ev.turn_id == turn_id:
            return _seconds(ev.at)
    return None


def _seconds(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


__all__ = ["approvals_carried", "record"]
