"""Folds over a session's events: the conversation the model sees, and one turn's state.

Nothing else keeps a copy of the conversation: each step rebuilds it from the stream. The
fold skips partial output (deltas of a step that never completed its message) and gives
every tool call the model made a result, so a provider never sees a dangling call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.costs import add_costs
from agentkit.engine.folds.compacted_view import TurnEnd, apply_compacted
from agentkit.events import NO_USAGE, Event, EventType, Usage
from agentkit.events.carried import Carried
from agentkit.models.base import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

MISSING_RESULT = "no result was recorded for this tool call"
BUDGET_TOOL = "budget"  # the approval a turn parks on when its budget runs out
LOOP_TOOL = "loop_guard"  # the approval a turn parks on when it loops (`loop_guard="ask"`)


def result_text(result: Any) -> str:
    """How a tool's result is shown to the model: strings as they are, the rest as JSON."""
    if isinstance(result, str):
        return result
    return _RESULTS.encode(result)


# `json.dumps(result, ensure_ascii=False, default=str)` builds this encoder on every call.
_RESULTS = json.JSONEncoder(ensure_ascii=False, default=str)


class _Conversation:
    __slots__ = (
        "_calls",
        "_open_calls",
        "_reasoning",
        "_signature",
        "_text",
        "ends",
        "messages",
    )

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._text: str = ""
        self._reasoning: str | None = None
        self._signature: str | None = None
        self._calls: list[ToolCall] = []
        self._open_calls: dict[str, str] = {}  # call id -> tool name, awaiting a result
        self.ends: list[TurnEnd] = []  # where each turn ended: compaction cuts only there

    def copy(self) -> _Conversation:
        """An independent copy (the messages themselves are immutable and shared)."""
        other = _Conversation.__new__(_Conversation)
        other.messages = list(self.messages)
        other._text, other._reasoning, other._signature = (
            self._text,
            self._reasoning,
            self._signature,
        )
        other._calls = list(self._calls)
        other._open_calls = dict(self._open_calls)
        other.ends = list(self.ends)
        return other

    def flush(self) -> None:
        if self._text or self._reasoning or self._calls:
            self.messages.append(
                AssistantMessage(
                    text=self._text,
                    reasoning=self._reasoning,
                    reasoning_signature=self._signature,
                    tool_calls=tuple(self._calls),
                )
            )
        self._text, self._reasoning, self._signature, self._calls = "", None, None, []

    def close_calls(self) -> None:
        """Give every call still waiting a result, so the next message is well-formed."""
        self.flush()
        for call_id, name in self._open_calls.items():
            self.messages.append(ToolResultMessage(call_id, name, MISSING_RESULT, True))
        self._open_calls.clear()

    def add(self, ev: Event) -> None:  # noqa: C901 - one branch per event type
        t, d = ev.type, ev.data
        if t == EventType.MESSAGE_RECEIVED:
            self.close_calls()
            self.messages.append(UserMessage(str(d.get("message", ""))))
        elif ev.turn_id is None:
            return  # direct tool calls on the session are not part of the model's dialogue
        elif t == EventType.STEP_STARTED:
            self.flush()
        elif t == EventType.REASONING_COMPLETED:
            self._reasoning = (self._reasoning or "") + str(d.get("text", ""))
            self._signature = d.get("signature") or self._signature
        elif t == EventType.MESSAGE_COMPLETED:
            self._text += str(d.get("text", ""))
        elif t == EventType.ACTIONS_REQUESTED:
            for a in d.get("actions") or []:
                call = ToolCall(
                    str(a["callId"]), str(a["toolName"]), dict(a.get("arguments") or {})
                )
                self._calls.append(call)
                self._open_calls[call.id] = call.name
        elif t == EventType.ACTION_RESULT:
            call_id = str(d.get("callId"))
            if call_id not in self._open_calls:
                return
            self.flush()
            name = self._open_calls.pop(call_id)
            if d.get("isError"):
                text = str(d.get("error") or result_text(d.get("result")))
                self.messages.append(ToolResultMessage(call_id, name, text, True))
            else:
                self.messages.append(ToolResultMessage(call_id, name, result_text(d.get("result"))))
        elif t in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            self.close_calls()
            self.ends.append((ev.index, len(self.messages)))
        elif t == EventType.CONTEXT_COMPACTED:
            self.messages, self.ends = apply_compacted(self.messages, self.ends, d)


_FOLDS: Carried[_Conversation] = Carried(_Conversation)  # the fold so far: open, never closed


def fold_conversation(events: Sequence[Event] | Iterable[Event]) -> list[Message]:
    """The model's view of a session: user messages, assistant steps, tool results.

    The fold goes event by event, and its state is kept per session and carried on (see
    `events.carried`): each step of a long conversation folds only the events recorded
    since the step before.
    """
    return fold_view(events)[0]


def fold_view(events: Sequence[Event] | Iterable[Event]) -> tuple[list[Message], list[TurnEnd]]:
    """`fold_conversation`, with where each whole turn ends in it (event index, message
    count): the places compaction may cut."""
    out = _FOLDS.over(events).copy()  # closing the open calls must not change the kept state
    out.close_calls()
    return out.messages, out.ends


@dataclass(slots=True)
class PendingCall:
    """A tool call of a turn that has no recorded result yet."""

    call_id: str
    tool_name: str
    arguments: dict[str, Any]
    approval_requested: bool = False
    approval_arguments: dict[str, Any] | None = None
    decision: str | None = None  # "approve" | "deny" once resolved
    decided_by: str | None = None
    decided_digest: str | None = None  # digest of the arguments the decision was made on
    started: bool = False  # `action.started` recorded: it may have run, never run it again


@dataclass(slots=True)
class TurnState:
    """What the events say about one turn: where it got to and what is still open."""

    turn_id: str
    received: bool = False
    started: bool = False
    terminal: bool = False
    steps: int = 0
    step_open: bool = False
    usage: Usage = field(default_factory=lambda: NO_USAGE)
    pending: dict[str, PendingCall] = field(default_factory=dict)
    message: str | None = None
    cost_usd: float | None = 0.0  # None once a step's price was unknown

    @property
    def parked(self) -> bool:
        """Waiting on a human: some open call has an unresolved approval request."""
        return any(p.approval_requested and p.decision is None for p in self.pending.values())

    @property
    def resumable(self) -> bool:
        """Every open call was parked for approval and every one has been decided."""
        return (
            not self.terminal
            and not self.step_open
            and bool(self.pending)
            and all(
                p.approval_requested and p.decision and not p.started for p in self.pending.values()
            )
        )


def _cost(data: dict[str, Any]) -> float | None:
    raw = data.get("costUsd")
    return float(raw) if isinstance(raw, int | float) else None


def _usage(raw: Any) -> Usage:
    return Usage.model_validate(raw) if isinstance(raw, dict) else NO_USAGE


class _TurnStarts:
    """Where each turn's first event sits in the stream (its position, from 0)."""

    __slots__ = ("first", "seen")

    def __init__(self) -> None:
        self.first: dict[str, int] = {}
        self.seen = 0

    def copy(self) -> _TurnStarts:
        other = _TurnStarts.__new__(_TurnStarts)
        other.first, other.seen = dict(self.first), self.seen
        return other

    def add(self, ev: Event) -> None:
        if ev.turn_id is not None and ev.turn_id not in self.first:
            self.first[ev.turn_id] = self.seen
        self.seen += 1


_TURN_STARTS: Carried[_TurnStarts] = Carried(_TurnStarts)


def turn_events(events: Sequence[Event] | Iterable[Event], turn_id: str) -> Iterable[Event]:
    """The events from `turn_id`'s first one on: none before it is the turn's.

    Every turn reads its own events out of a session that grows by a turn at a time, so the
    start of each turn is kept (carried on like the conversation) and the rest is skipped.
    """
    if not isinstance(events, Sequence):
        return events
    first = _TURN_STARTS.over(events).first.get(turn_id)
    if first is None:
        return ()
    return events[first:]


def fold_turn(events: Iterable[Event], turn_id: str) -> TurnState:  # noqa: C901
    """The state of `turn_id`, folded from the session's events."""
    st = TurnState(turn_id)
    for ev in turn_events(events, turn_id):
        if ev.turn_id != turn_id:
            continue
        t, d = ev.type, ev.data
        if t == EventType.MESSAGE_RECEIVED:
            st.received, st.message = True, str(d.get("message", ""))
        elif t == EventType.TURN_STARTED:
            st.started = True
        elif t == EventType.STEP_STARTED:
            st.steps, st.step_open = st.steps + 1, True
        elif t == EventType.STEP_COMPLETED:
            st.step_open = False
            st.usage = st.usage + _usage(d.get("usage"))
            st.cost_usd = add_costs(st.cost_usd, _cost(d))
        elif t == EventType.SUBAGENT_COMPLETED or (
            t == EventType.CONTEXT_COMPACTED and "usage" in d  # a summary call was made
        ):
            st.usage = st.usage + _usage(d.get("usage"))
            st.cost_usd = add_costs(st.cost_usd, _cost(d))
        elif t == EventType.ACTIONS_REQUESTED:
            for a in d.get("actions") or []:
                cid = str(a["callId"])
                st.pending[cid] = PendingCall(
                    cid, str(a["toolName"]), dict(a.get("arguments") or {})
                )
        elif t == EventType.ACTION_RESULT:
            st.pending.pop(str(d.get("callId")), None)
        elif t == EventType.ACTION_STARTED:
            started = st.pending.get(str(d.get("callId")))
            if started is not None:
                started.started = True
        elif t == EventType.ACTION_APPROVAL_REQUESTED:
            p = st.pending.get(str(d.get("callId")))
            if p is None and d.get("toolName") in (BUDGET_TOOL, LOOP_TOOL):
                # A budget or loop question parks the turn with no tool call behind it.
                cid, tool = str(d.get("callId")), str(d.get("toolName"))
                p = st.pending[cid] = PendingCall(cid, tool, dict(d.get("arguments") or {}))
            if p is not None:
                p.approval_requested = True
                p.approval_arguments = dict(d.get("arguments") or {})
        elif t == EventType.ACTION_APPROVAL_RESOLVED:
            p = st.pending.get(str(d.get("callId")))
            if p is not None and p.decision is None:
                p.decision, p.decided_by = str(d.get("decision")), d.get("principal")
                p.decided_digest = d.get("argumentsDigest")
        elif t in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            st.terminal = True
    return st


def open_turns(events: Iterable[Event]) -> list[str]:
    """Ids of turns that were received or started but never reached a terminal event."""
    seen: dict[str, bool] = {}
    for ev in events:
        if ev.turn_id is None:
            continue
        if ev.type in (EventType.MESSAGE_RECEIVED, EventType.TURN_STARTED):
            seen.setdefault(ev.turn_id, False)
        elif ev.type in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            seen[ev.turn_id] = True
    return [tid for tid, done in seen.items() if not done]
