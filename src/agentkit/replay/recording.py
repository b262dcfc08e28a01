"""A recorded session read back: its inputs, each turn's model steps and its tool results.

A session's event stream is the whole truth of what happened, so it splits cleanly into
what came from outside (messages, approval decisions, direct tool calls: the *inputs* a
replay sends again) and what the model and the tools answered (the *cassette* a replay
serves instead of asking them again).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.events import Event, EventType, Usage

__all__ = [
    "Decision",
    "DirectCall",
    "Message",
    "RecordedCall",
    "RecordedStep",
    "RecordedTurn",
    "Recording",
    "load_events",
    "parse_events",
]

INTERRUPTED = "turn interrupted"


def parse_events(text: str) -> list[Event]:
    """Events from NDJSON (one event per line, as the stream, the events dump and the file
    store write them) or from a JSON array of events. Blank lines are skipped."""
    stripped = text.strip()
    if stripped.startswith("["):
        raw = json.loads(stripped)
        if not isinstance(raw, list):
            raise ValueError("a JSON events file must be an array of events")
        items: Iterable[Any] = raw
    else:
        items = []
        for number, line in enumerate(stripped.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"line {number} is not JSON: {exc.msg}") from None
    events: list[Event] = []
    for item in items:
        if not isinstance(item, dict) or "type" not in item or "index" not in item:
            raise ValueError("every line must be an event: {type, index, sessionId, at, data}")
        events.append(Event.from_wire(item))
    events.sort(key=lambda e: e.index)
    return events


def load_events(path: Path) -> list[Event]:
    """The events of an NDJSON (or JSON array) file; `ValueError` when it is not one."""
    return parse_events(path.read_text(encoding="utf-8"))


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """A tool call as the recording has it, with its result."""

    index: int  # of the `actions.requested` that asked for it
    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    turn_id: str | None
    result: dict[str, Any] | None = None  # the `action.result` data, when there was one
    approval_index: int | None = None  # of its `action.approval_requested`, if it parked
    subagent: tuple[int, str] | None = None  # (index of `subagent.called`, its name)


@dataclass(slots=True)
class RecordedStep:
    """What the model answered in one step."""

    text: str = ""
    reasoning: str | None = None
    signature: str | None = None
    calls: list[RecordedCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "end_turn"
    error: str | None = None  # the step never completed: the turn failed with this


@dataclass(slots=True)
class RecordedTurn:
    turn_id: str
    index: int  # of its `turn.started`
    model: str | None
    steps: list[RecordedStep] = field(default_factory=list)
    end_index: int | None = None
    end_type: str | None = None  # turn.completed or turn.failed
    error: str | None = None

    @property
    def interrupted(self) -> bool:
        return self.end_type == EventType.TURN_FAILED and self.error == INTERRUPTED


@dataclass(frozen=True, slots=True)
class Message:
    index: int
    text: str
    source: str
    turn: RecordedTurn | None  # the turn it started, when it started one


@dataclass(frozen=True, slots=True)
class Decision:
    index: int
    call_id: str
    decision: str


@dataclass(frozen=True, slots=True)
class DirectCall:
    call: RecordedCall


Input = Message | Decision | DirectCall


@dataclass(slots=True)
class Recording:
    """One session's events, split into inputs, turns and calls."""

    events: list[Event]
    session_id: str
    mode: str = "chat"
    inputs: list[Input] = field(default_factory=list)
    turns: list[RecordedTurn] = field(default_factory=list)
    calls: dict[str, RecordedCall] = field(default_factory=dict)  # by call id
    subagent_results: list[tuple[str, str]] = field(default_factory=list)  # (prompt, text)

    @classmethod
    def of(cls, events: list[Event]) -> Recording:
        if not events:
            raise ValueError("the recording has no events")
        rec = cls(events=events, session_id=events[0].session_id)
        rec._split()
        return rec

    @property
    def messages(self) -> list[Message]:
        return [i for i in self.inputs if isinstance(i, Message)]

    def turn_calls(self) -> list[RecordedCall]:
        """Every call in the order it was requested."""
        return sorted(self.calls.values(), key=lambda c: (c.index, c.call_id))

    def _split(self) -> None:  # noqa: C901 - one branch per event type that matters
        turns: dict[str, RecordedTurn] = {}
        open_steps: dict[str, RecordedStep] = {}
        last_message: tuple[int, str, str] | None = None
        started_by: dict[int, RecordedTurn] = {}
        calls: dict[str, RecordedCall] = {}
        subagent_calls: dict[str, tuple[int, str, str]] = {}
        inputs: list[tuple[int, Any]] = []
        for e in self.events:
            d = e.data
            t = e.type
            if t == EventType.SESSION_STARTED:
                self.mode = str(d.get("mode") or "chat")
            elif t == EventType.MESSAGE_RECEIVED:
                last_message = (e.index, str(d.get("message", "")), str(d.get("source") or ""))
                inputs.append((e.index, last_message))
            elif t == EventType.TURN_STARTED and e.turn_id:
                turn = RecordedTurn(e.turn_id, e.index, d.get("model"))
                turns[e.turn_id] = turn
                self.turns.append(turn)
                if last_message is not None and last_message[0] not in started_by:
                    started_by[last_message[0]] = turn
            elif t == EventType.STEP_STARTED and e.turn_id in turns:
                step = RecordedStep()
                open_steps[e.turn_id] = step
                turns[e.turn_id].steps.append(step)
            elif t == EventType.REASONING_COMPLETED and e.turn_id in open_steps:
                open_steps[e.turn_id].reasoning = d.get("text")
                open_steps[e.turn_id].signature = d.get("signature")
            elif t == EventType.MESSAGE_COMPLETED and e.turn_id in open_steps:
                open_steps[e.turn_id].text = str(d.get("text", ""))
            elif t == EventType.ACTIONS_REQUESTED:
                for a in d.get("actions", []):
                    arguments = dict(a.get("arguments") or {})
                    call = RecordedCall(e.index, a["callId"], a["toolName"], arguments, e.turn_id)
                    calls[call.call_id] = call
                    if e.turn_id in open_steps:
                        open_steps[e.turn_id].calls.append(call)
                    elif e.turn_id is None:
                        inputs.append((e.index, DirectCall(call)))
            elif t == EventType.ACTION_APPROVAL_REQUESTED and d.get("callId") in calls:
                calls[d["callId"]] = _with(calls[d["callId"]], approval_index=e.index)
            elif t == EventType.ACTION_APPROVAL_RESOLVED:
                inputs.append((e.index, Decision(e.index, d["callId"], str(d.get("decision")))))
            elif t == EventType.ACTION_RESULT and d.get("callId") in calls:
                calls[d["callId"]] = _with(calls[d["callId"]], result=dict(d))
            elif t == EventType.SUBAGENT_CALLED:
                subagent_calls[d["callId"]] = (e.index, str(d["subagent"]), str(d["prompt"]))
            elif t == EventType.SUBAGENT_COMPLETED and d.get("callId") in subagent_calls:
                _, _, prompt = subagent_calls[d["callId"]]
                if d.get("error") is None:
                    self.subagent_results.append((prompt, str(d.get("result") or "")))
            elif t == EventType.STEP_COMPLETED and e.turn_id in open_steps:
                step = open_steps.pop(e.turn_id)
                step.usage = Usage.model_validate(d.get("usage") or {})
                step.stop_reason = str(d.get("stopReason") or step.stop_reason)
            elif t in (EventType.TURN_COMPLETED, EventType.TURN_FAILED) and e.turn_id in turns:
                turn = turns[e.turn_id]
                turn.end_index, turn.end_type = e.index, t
                turn.error = d.get("error")
                dangling = open_steps.pop(e.turn_id, None)
                if dangling is not None and not dangling.calls:
                    dangling.error = turn.error or "the step did not complete"
        for cid, (index, name, _) in subagent_calls.items():
            if cid in calls:
                calls[cid] = _with(calls[cid], subagent=(index, name))
        self.calls = calls
        # Steps hold the calls as first seen; give them the completed records.
        for turn in self.turns:
            for step in turn.steps:
                step.calls = [calls[c.call_id] for c in step.calls]
        for _, item in sorted(inputs, key=lambda p: p[0]):
            if isinstance(item, tuple):
                index, text, source = item
                self.inputs.append(Message(index, text, source, started_by.get(index)))
            elif isinstance(item, DirectCall):
                self.inputs.append(DirectCall(calls[item.call.call_id]))
            else:
                self.inputs.append(item)


def _with(call: RecordedCall, **changes: Any) -> RecordedCall:
    from dataclasses import replace

    return replace(call, **changes)
