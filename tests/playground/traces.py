"""Hand-written event streams for the browser tests: every documented event type in one
session, and one turn with parallel tools, an approval and a subagent at known times."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agentkit.events import EventType

T0 = datetime(2026, 1, 5, 9, 0, 0, tzinfo=UTC)
SID = "ses_trace"
TURN = "turn_1"


def at(ms: int) -> str:
    """The ISO time `ms` milliseconds after the trace's start."""
    return (T0 + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _events(rows: list[tuple[int, str, str | None, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [
        {"type": t, "index": i, "sessionId": SID, "turnId": turn, "at": at(ms), "data": data}
        for i, (ms, t, turn, data) in enumerate(rows)
    ]


USAGE = {"inputTokens": 120, "outputTokens": 30, "cacheReadTokens": 0, "cacheWriteTokens": 0}


def every_type() -> list[dict[str, Any]]:
    """A successful session with every documented type (failures aside: they are errors)
    plus `context.compacted` and a type no version of the page knows."""
    rows: list[tuple[int, str, str | None, dict[str, Any]]] = [
        (0, "session.forked", None, {"fromSessionId": "ses_original0000001", "atIndex": 1}),
        (0, "session.started", None, {"channelId": "http", "mode": "chat"}),
        (1, "ab.assigned", None, {"experiment": "tone", "variant": "warm"}),
        (2, "agent.bound", None, {"agentId": "helpdesk", "model": "test"}),
        (3, "message.received", TURN, {"message": "weather and wipe please"}),
        (4, "turn.started", TURN, {"model": "test"}),
        (5, "step.started", TURN, {"step": 1}),
        (20, "reasoning.appended", TURN, {"text": "Thinking"}),
        (25, "reasoning.completed", TURN, {"text": "Thinking it over."}),
        (30, "message.appended", TURN, {"text": "Let me "}),
        (35, "message.completed", TURN, {"text": "Let me check."}),
        (
            40,
            "actions.requested",
            TURN,
            {
                "actions": [
                    {"callId": "c1", "toolName": "get_weather", "arguments": {"city": "Paris"}},
                    {"callId": "c2", "toolName": "wipe_notes", "arguments": {"folder": "notes"}},
                ]
            },
        ),
        (45, "step.completed", TURN, {"step": 1, "durationMs": 40, "usage": USAGE}),
        (
            50,
            "action.approval_requested",
            TURN,
            {"callId": "c2", "toolName": "wipe_notes", "arguments": {"folder": "notes"}},
        ),
        (
            60,
            "action.result",
            TURN,
            {"callId": "c1", "toolName": "get_weather", "result": {"tempC": 21}, "durationMs": 10},
        ),
        (70, "message.queued", None, {"queueId": "q1", "message": "and tomorrow?"}),
        (
            900,
            "action.approval_resolved",
            TURN,
            {"callId": "c2", "decision": "approve", "principal": "local"},
        ),
        (905, "action.started", TURN, {"callId": "c2", "toolName": "wipe_notes"}),
        (
            960,
            "action.result",
            TURN,
            {
                "callId": "c2",
                "toolName": "wipe_notes",
                "result": {"wiped": "notes"},
                "durationMs": 55,
            },
        ),
        (965, "subagent.called", TURN, {"callId": "c2", "subagent": "scribe", "prompt": "Sum up"}),
        (
            980,
            "subagent.completed",
            TURN,
            {"callId": "c2", "subagent": "scribe", "result": "Summed.", "usage": USAGE},
        ),
        (
            990,
            "context.compacted",
            TURN,
            {"throughIndex": 2, "strategy": "summarize", "summary": "The user asked about Paris."},
        ),
        (995, "ab.paused", None, {"experiment": "tone", "variant": "warm", "reason": "cost"}),
        (996, "session.paused", None, {"by": "local"}),
        (997, "session.resumed", None, {"by": "local"}),
        (1000, "future.thing", TURN, {"anything": True}),
        (1010, "turn.completed", TURN, {"result": "Done.", "usage": USAGE, "costUsd": 0.0012}),
        (1011, "session.waiting", None, {}),
        (1015, "session.killed", None, {"by": "local"}),
        (1020, "session.completed", None, {"result": "All done."}),
    ]
    return _events(rows)


def write_trace(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


DOCUMENTED = {t.value for t in EventType}


def parallel_turn() -> list[dict[str, Any]]:
    """One turn: step 1 asks for get_weather and a `task` (a subagent) in parallel and for
    wipe_notes, which waits for approval; step 2 answers. Times in ms from the start."""
    calls = [
        {"callId": "c1", "toolName": "get_weather", "arguments": {"city": "Paris"}},
        {"callId": "c3", "toolName": "task", "arguments": {"subagent": "scribe", "prompt": "Sum"}},
        {"callId": "c2", "toolName": "wipe_notes", "arguments": {"folder": "notes"}},
    ]
    usage2 = {**USAGE, "inputTokens": 300, "outputTokens": 40}
    rows: list[tuple[int, str, str | None, dict[str, Any]]] = [
        (0, "session.started", None, {"channelId": "http", "mode": "chat"}),
        (0, "message.received", TURN, {"message": "weather, a summary, and wipe"}),
        (0, "turn.started", TURN, {"model": "test"}),
        (0, "step.started", TURN, {"step": 1}),
        (20, "reasoning.appended", TURN, {"text": "Planning"}),
        (50, "actions.requested", TURN, {"actions": calls}),
        (60, "subagent.called", TURN, {"callId": "c3", "subagent": "scribe", "prompt": "Sum"}),
        (60, "action.approval_requested", TURN, calls[2]),
        (
            260,
            "action.result",
            TURN,
            {"callId": "c1", "toolName": "get_weather", "result": {"t": 21}, "durationMs": 200},
        ),
        (
            460,
            "subagent.completed",
            TURN,
            {"callId": "c3", "subagent": "scribe", "result": "Summed.", "usage": USAGE},
        ),
        (
            470,
            "action.result",
            TURN,
            {"callId": "c3", "toolName": "task", "result": "Summed.", "durationMs": 410},
        ),
        (
            480,
            "step.completed",
            TURN,
            {"step": 1, "durationMs": 480, "usage": USAGE, "costUsd": 0.0009},
        ),
        (1500, "action.approval_resolved", TURN, {"callId": "c2", "decision": "approve"}),
        (1505, "action.started", TURN, {"callId": "c2", "toolName": "wipe_notes"}),
        (
            1805,
            "action.result",
            TURN,
            {"callId": "c2", "toolName": "wipe_notes", "result": {"wiped": 1}, "durationMs": 300},
        ),
        (1810, "step.started", TURN, {"step": 2}),
        (1910, "message.appended", TURN, {"text": "Done"}),
        (1990, "message.completed", TURN, {"text": "Done: all three."}),
        (2000, "step.completed", TURN, {"step": 2, "durationMs": 190, "usage": usage2}),
        (2000, "turn.completed", TURN, {"result": "Done: all three.", "usage": usage2}),
        (2001, "session.waiting", None, {}),
    ]
    return _events(rows)
