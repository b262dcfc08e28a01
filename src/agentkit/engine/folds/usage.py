"""Spend and latency over time, folded from the recorded turns (`GET /v1/usage`).

Each finished turn (`turn.completed` or `turn.failed`) counts in the hour or the UTC day it
ended in: the turn, its tokens in and out, its cost, and its latency (from the turn's
`message.received` to its end). Where a budget bit is read from the streams too: a turn
that parked on the engine's "budget exceeded: continue?" approval, and the turn with which
a caller's spend of the UTC day reached the agent's `principal_daily_*` limit (after it,
that caller's new messages were refused with `429` until midnight UTC). A fork's copy of
its original's turns was spent in the original and is not counted again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from agentkit.costs import Budget
from agentkit.engine.folds.forked import copied_through
from agentkit.engine.turn.budget import is_budget_question
from agentkit.events import Event, EventType

Bucket = Literal["hour", "day"]

__all__ = ["Bucket", "TurnUse", "bucket_start", "percentile", "turns_of", "usage_report"]


@dataclass(frozen=True, slots=True)
class TurnUse:
    """One finished turn: who, where, when, and what it used."""

    session_id: str
    channel_id: str
    principal: str | None
    at: str
    failed: bool
    input_tokens: int
    output_tokens: int
    tokens: int  # every billed token (in, out, cache read and write): the daily limit's unit
    cost_usd: float | None
    latency_ms: float | None
    budget_stop: bool = False


def _moment(at: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def bucket_start(at: str, bucket: Bucket) -> str | None:
    """The start of the hour or UTC day `at` falls in, as `YYYY-MM-DDTHH:00:00Z`."""
    moment = _moment(at)
    if moment is None:
        return None
    moment = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    if bucket == "day":
        moment = moment.replace(hour=0)
    return moment.strftime("%Y-%m-%dT%H:00:00Z")


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


@dataclass(slots=True)
class _Open:
    received_at: str | None = None
    budget_stop: bool = False


def turns_of(
    session_id: str, channel_id: str, principal: str | None, events: Iterable[Event]
) -> list[TurnUse]:
    """The finished turns of one session's events."""
    listed = list(events)
    copied = copied_through(listed)
    open_turns: dict[str, _Open] = {}
    out: list[TurnUse] = []
    for ev in listed:
        if ev.turn_id is None or ev.index <= copied:
            continue
        turn = open_turns.setdefault(ev.turn_id, _Open())
        if ev.type == EventType.MESSAGE_RECEIVED and turn.received_at is None:
            turn.received_at = ev.at
        elif ev.type == EventType.ACTION_APPROVAL_REQUESTED:
            name, call_id = str(ev.data.get("toolName", "")), str(ev.data.get("callId", ""))
            if is_budget_question(name, call_id):
                turn.budget_stop = True
        elif ev.type in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            open_turns.pop(ev.turn_id, None)
            raw = ev.data.get("usage")
            usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
            cost = ev.data.get("costUsd")
            start, end = _moment(turn.received_at or ""), _moment(ev.at)
            latency = max(0.0, (end - start).total_seconds() * 1000.0) if start and end else None
            billed = sum(
                _count(usage.get(k))
                for k in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
            )
            out.append(
                TurnUse(
                    session_id=session_id,
                    channel_id=channel_id,
                    principal=principal,
                    at=ev.at,
                    failed=ev.type == EventType.TURN_FAILED,
                    input_tokens=_count(usage.get("inputTokens")),
                    output_tokens=_count(usage.get("outputTokens")),
                    tokens=billed,
                    cost_usd=float(cost) if isinstance(cost, int | float) else None,
                    latency_ms=latency,
                    budget_stop=turn.budget_stop,
                )
            )
    return out


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank `q` percentile (0 < q <= 100) of `values`; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(slots=True)
class _Row:
    turns: int = 0
    failed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    priced: int = 0
    latencies: list[float] = field(default_factory=list)
    budget_stops: int = 0

    def add(self, t: TurnUse) -> None:
        self.turns += 1
        self.failed += t.failed
        self.input_tokens += t.input_tokens
        self.output_tokens += t.output_tokens
        if t.cost_usd is not None:
            self.cost += t.cost_usd
            self.priced += 1
        if t.latency_ms is not None:
            self.latencies.append(t.latency_ms)
        self.budget_stops += t.budget_stop

    def wire(self, start: str) -> dict[str, Any]:
        p50, p95 = percentile(self.latencies, 50), percentile(self.latencies, 95)
        return {
            "start": start,
            "turns": self.turns,
            "failedTurns": self.failed,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            # None when no turn of the bucket had a price (a model without prices).
            "costUsd": round(self.cost, 6) if self.priced else None,
            "latencyP50Ms": round(p50, 1) if p50 is not None else None,
            "latencyP95Ms": round(p95, 1) if p95 is not None else None,
            "budgetStops": self.budget_stops,
        }


def _daily_limit_hits(turns: list[TurnUse], budget: Budget) -> list[dict[str, Any]]:
    """Per caller and UTC day, the turn with which the day's spend reached the limit."""
    if budget.principal_daily_tokens is None and budget.principal_daily_usd is None:
        return []
    spent: dict[tuple[str, str], tuple[int, float]] = {}
    hits: list[dict[str, Any]] = []
    for t in turns:
        day = bucket_start(t.at, "day")
        if t.principal is None or day is None:
            continue
        key = (t.principal, day)
        if key in spent and spent[key][0] < 0:
            continue  # already reached that day
        tokens, usd = spent.get(key, (0, 0.0))
        tokens, usd = tokens + t.tokens, usd + (t.cost_usd or 0.0)
        over = []
        if budget.principal_daily_tokens is not None and tokens >= budget.principal_daily_tokens:
            over.append("tokens")
        if budget.principal_daily_usd is not None and usd >= budget.principal_daily_usd:
            over.append("usd")
        if over:
            hits.append({"principal": t.principal, "at": t.at, "day": day, "limits": over})
            spent[key] = (-1, usd)
        else:
            spent[key] = (tokens, usd)
    return hits


def usage_report(turns: Iterable[TurnUse], bucket: Bucket, budget: Budget) -> dict[str, Any]:
    """The `GET /v1/usage` body over `turns` (already filtered to what the caller sees)."""
    ordered = sorted(turns, key=lambda t: _moment(t.at) or datetime.min.replace(tzinfo=UTC))
    rows: dict[str, _Row] = {}
    for t in ordered:
        start = bucket_start(t.at, bucket)
        if start is not None:
            rows.setdefault(start, _Row()).add(t)
    total = _Row()
    for t in ordered:
        total.add(t)
    return {
        "bucket": bucket,
        "buckets": [rows[k].wire(k) for k in sorted(rows)],
        "total": total.wire(ordered[0].at if ordered else ""),
        "budgetStops": [
            {"at": t.at, "sessionId": t.session_id, "principal": t.principal}
            for t in ordered
            if t.budget_stop
        ],
        "dailyLimit": {
            "tokens": budget.principal_daily_tokens,
            "usd": budget.principal_daily_usd,
        },
        "dailyLimitReached": _daily_limit_hits(ordered, budget),
        "channels": sorted({t.channel_id for t in ordered}),
        "principals": sorted({t.principal for t in ordered if t.principal is not None}),
    }
