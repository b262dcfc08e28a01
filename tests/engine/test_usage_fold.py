"""`GET /v1/usage`'s fold: turns per hour and day, tokens, cost, latency percentiles, and
where a budget or the daily limit bit."""

from __future__ import annotations

from typing import Any

from agentkit.costs import Budget
from agentkit.engine.folds.usage import bucket_start, percentile, turns_of, usage_report
from agentkit.events import Event


def turn(sid: str, i: int, k: int, start: str, end: str, **data: Any) -> list[Event]:
    """Events `i`.. of turn `k`: received at `start`, ended at `end` with `data`."""
    tid = f"turn_{k}"
    kind = "turn.failed" if data.pop("failed", False) else "turn.completed"
    out = [Event("message.received", i, sid, start, {"message": "hi"}, tid)]
    if data.pop("budget", False):
        parked = {"callId": "budget_1", "toolName": "budget", "arguments": {}}
        out.append(Event("action.approval_requested", i + 1, sid, start, parked, tid))
    out.append(Event(kind, i + len(out), sid, end, data, tid))
    return out


def session(sid: str, *turns: list[Event]) -> list[Event]:
    events = [Event("session.started", 0, sid, turns[0][0].at, {"channelId": "http"})]
    for t in turns:
        for ev in t:
            events.append(Event(ev.type, len(events), sid, ev.at, ev.data, ev.turn_id))
    return events


USAGE = {"inputTokens": 100, "outputTokens": 20, "cacheReadTokens": 5}


def test_turns_land_in_hours_and_days_with_their_spend_and_latency() -> None:
    a = session(
        "ses_a",
        turn(
            "ses_a",
            0,
            0,
            "2026-03-01T09:10:00.000Z",
            "2026-03-01T09:10:01.500Z",
            usage=USAGE,
            costUsd=0.01,
        ),
        turn(
            "ses_a",
            0,
            1,
            "2026-03-01T09:50:00.000Z",
            "2026-03-01T09:50:00.250Z",
            usage=USAGE,
            costUsd=0.02,
        ),
        turn(
            "ses_a",
            0,
            2,
            "2026-03-01T11:00:00.000Z",
            "2026-03-01T11:00:04.000Z",
            failed=True,
            usage=USAGE,
        ),
    )
    turns = turns_of("ses_a", "http", "alice", a)
    assert [t.latency_ms for t in turns] == [1500.0, 250.0, 4000.0]
    assert turns[0].tokens == 125 and turns[2].cost_usd is None
    hourly = usage_report(turns, "hour", Budget())
    assert [b["start"] for b in hourly["buckets"]] == [
        "2026-03-01T09:00:00Z",
        "2026-03-01T11:00:00Z",
    ]
    nine = hourly["buckets"][0]
    assert nine == {
        "start": "2026-03-01T09:00:00Z",
        "turns": 2,
        "failedTurns": 0,
        "inputTokens": 200,
        "outputTokens": 40,
        "costUsd": 0.03,
        "latencyP50Ms": 250.0,
        "latencyP95Ms": 1500.0,
        "budgetStops": 0,
    }
    assert hourly["buckets"][1]["costUsd"] is None  # no priced turn in that hour
    assert hourly["buckets"][1]["failedTurns"] == 1
    daily = usage_report(turns, "day", Budget())
    assert [b["turns"] for b in daily["buckets"]] == [3]
    assert daily["total"]["inputTokens"] == 300


def test_budget_stops_and_the_daily_limit_are_marked() -> None:
    budget = Budget(principal_daily_tokens=300)
    a = session(
        "ses_b",
        turn("ses_b", 0, 0, "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:01.000Z", usage=USAGE),
        turn(
            "ses_b",
            0,
            1,
            "2026-03-01T10:00:00.000Z",
            "2026-03-01T10:00:01.000Z",
            usage=USAGE,
            budget=True,
        ),
        turn("ses_b", 0, 2, "2026-03-01T11:00:00.000Z", "2026-03-01T11:00:01.000Z", usage=USAGE),
        turn("ses_b", 0, 3, "2026-03-02T08:00:00.000Z", "2026-03-02T08:00:01.000Z", usage=USAGE),
    )
    body = usage_report(turns_of("ses_b", "http", "bob", a), "hour", budget)
    assert body["budgetStops"] == [
        {"at": "2026-03-01T10:00:01.000Z", "sessionId": "ses_b", "principal": "bob"}
    ]
    assert [b["budgetStops"] for b in body["buckets"]] == [0, 1, 0, 0]
    # 125 tokens a turn: the third turn of the day reaches 300; the next day starts afresh.
    assert body["dailyLimitReached"] == [
        {
            "principal": "bob",
            "at": "2026-03-01T11:00:01.000Z",
            "day": "2026-03-01T00:00:00Z",
            "limits": ["tokens"],
        }
    ]
    assert body["dailyLimit"] == {"tokens": 300, "usd": None}


def test_a_forks_copied_turns_are_not_counted_again() -> None:
    original = turn(
        "ses_f", 1, 0, "2026-03-01T09:00:00.000Z", "2026-03-01T09:00:01.000Z", usage=USAGE
    )
    forked = [
        Event(
            "session.forked",
            0,
            "ses_f",
            "2026-03-01T09:30:00.000Z",
            {"fromSessionId": "ses_o", "atIndex": 1},
        )
    ]
    events = forked + original
    own = turn(
        "ses_f", len(events), 1, "2026-03-01T09:40:00.000Z", "2026-03-01T09:40:02.000Z", usage=USAGE
    )
    turns = turns_of("ses_f", "http", None, events + own)
    assert [t.at for t in turns] == ["2026-03-01T09:40:02.000Z"]


def test_percentiles_and_buckets() -> None:
    assert percentile([], 50) is None
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert percentile([float(i) for i in range(1, 101)], 95) == 95.0
    assert bucket_start("2026-03-01T23:59:59.999+01:00", "hour") == "2026-03-01T22:00:00Z"
    assert bucket_start("2026-03-01T23:59:59.999Z", "day") == "2026-03-01T00:00:00Z"
    assert bucket_start("not a time", "day") is None
