"""AG-UI: a turn's events as the AG-UI events a run streams (`ag_ui.core` types).

One AG-UI run is one turn, or the part of one up to where it parks on approvals: the run
then finishes with an `interrupt` outcome, one interrupt per parked call, and the next
run answers them in its `resume` entries. Ids are derived from our event indexes, so a
replay of the same events yields the same AG-UI events.
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from agentkit.events import Event, EventType

APPROVAL_REASON = "tool_approval"
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"decision": {"type": "string", "enum": ["approve", "deny"]}},
    "required": ["decision"],
}


_STREAMED = frozenset(
    {
        EventType.REASONING_APPENDED,
        EventType.REASONING_COMPLETED,
        EventType.MESSAGE_APPENDED,
        EventType.MESSAGE_COMPLETED,
    }
)


def interrupt_id(session_id: str, call_id: str) -> str:
    """An interrupt names its session too, so a resume finds it with no other lookup."""
    return f"{session_id}/{call_id}"


def split_interrupt_id(value: str) -> tuple[str, str] | None:
    session_id, sep, call_id = value.partition("/")
    return (session_id, call_id) if sep and session_id and call_id else None


def tool_content(data: dict[str, Any]) -> str:
    """A tool result as the text AG-UI carries: the error, a string, or JSON."""
    if data.get("isError"):
        return str(data.get("error") or data.get("result") or "tool failed")
    result = data.get("result")
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


class AgUiRun:
    """Translates one turn's events into one AG-UI run.

    Events at or before `quiet_through` update the state but emit nothing: a run that
    continues a turn (after approvals, or a dropped stream) is fed from the turn's start,
    so open messages and tool calls keep the ids the client already has.
    """

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        session_id: str,
        turn_id: str,
        *,
        quiet_through: int = -1,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.session_id = session_id
        self.turn_id = turn_id
        self.quiet_through = quiet_through
        self.done = False
        self.text_id: str | None = None
        self.last_text_id: str | None = None
        self.reasoning_id: str | None = None
        self.interrupts: list[Interrupt] = []

    def start(self) -> BaseEvent:
        return RunStartedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            metadata={"agentkit": {"sessionId": self.session_id, "turnId": self.turn_id}},
        )

    def error(self, message: str, code: str) -> BaseEvent:
        self.done = True
        return RunErrorEvent(message=message, code=code)

    def feed(self, event: Event) -> list[BaseEvent]:
        """The AG-UI events for one of ours (none for another turn's or a quiet one)."""
        if self.done or event.turn_id != self.turn_id:
            return []
        out = self._translate(event)
        return out if event.index > self.quiet_through else []

    def _translate(self, ev: Event) -> list[BaseEvent]:
        t, d = ev.type, ev.data
        mark = f"{self.turn_id}-{ev.index}"
        if t in _STREAMED:
            return self._streamed(t, str(d.get("text") or ""), mark)
        if t == EventType.STEP_STARTED:
            return [StepStartedEvent(step_name=f"step {d.get('step')}")]
        if t == EventType.ACTIONS_REQUESTED:
            return self._close_all() + self._tool_calls(d.get("actions") or [])
        if t == EventType.ACTION_RESULT:
            call_id = str(d.get("callId"))
            return [
                ToolCallResultEvent(
                    message_id=f"{call_id}-result", tool_call_id=call_id, content=tool_content(d)
                )
            ]
        if t == EventType.ACTION_APPROVAL_REQUESTED:
            self._park(d)
            return []
        if t == EventType.STEP_COMPLETED:
            return self._end_step(ev, d)
        if t in (EventType.TURN_COMPLETED, EventType.TURN_FAILED):
            return self._end_turn(ev, d)
        return []

    def _streamed(self, t: str, text: str, mark: str) -> list[BaseEvent]:
        """Reasoning and text: deltas as they come, the whole text when none came."""
        if t == EventType.REASONING_APPENDED:
            return [*self._open_reasoning(mark), *self._reasoning(text)]
        if t == EventType.MESSAGE_APPENDED:
            return [*self._open_text(mark), *self._text(text)]
        if t == EventType.REASONING_COMPLETED:
            opened = self.reasoning_id is None
            out = self._open_reasoning(mark)
            return out + (self._reasoning(text) if opened else []) + self._close_reasoning()
        opened = self.text_id is None
        out = self._open_text(mark)
        return out + (self._text(text) if opened else []) + self._close_text()

    def _end_turn(self, ev: Event, d: dict[str, Any]) -> list[BaseEvent]:
        out = self._close_all()
        self.done = ev.index > self.quiet_through
        if ev.type == EventType.TURN_FAILED:
            error = str(d.get("error") or "turn failed")
            return [*out, RunErrorEvent(message=error, code="turn_failed")]
        finished = RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            result=d.get("result"),
            outcome=RunFinishedSuccessOutcome(),
        )
        return [*out, finished]

    def _end_step(self, ev: Event, d: dict[str, Any]) -> list[BaseEvent]:
        out: list[BaseEvent] = [
            *self._close_all(),
            StepFinishedEvent(step_name=f"step {d.get('step')}"),
        ]
        if self.interrupts:
            parked, self.interrupts = self.interrupts, []
            if ev.index > self.quiet_through:
                self.done = True
                out.append(
                    RunFinishedEvent(
                        thread_id=self.thread_id,
                        run_id=self.run_id,
                        outcome=RunFinishedInterruptOutcome(interrupts=parked),
                    )
                )
        return out

    def _park(self, d: dict[str, Any]) -> None:
        call_id = str(d.get("callId"))
        self.interrupts.append(
            Interrupt(
                id=interrupt_id(self.session_id, call_id),
                reason=APPROVAL_REASON,
                message=f"Approve the call to {d.get('toolName')}?",
                tool_call_id=call_id,
                response_schema=DECISION_SCHEMA,
                metadata={"toolName": d.get("toolName"), "arguments": d.get("arguments")},
            )
        )

    def _tool_calls(self, actions: list[dict[str, Any]]) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for action in actions:
            call_id = str(action.get("callId"))
            out += [
                ToolCallStartEvent(
                    tool_call_id=call_id,
                    tool_call_name=str(action.get("toolName")),
                    parent_message_id=self.last_text_id,
                ),
                ToolCallArgsEvent(
                    tool_call_id=call_id,
                    delta=json.dumps(action.get("arguments") or {}, ensure_ascii=False),
                ),
                ToolCallEndEvent(tool_call_id=call_id),
            ]
        return out

    def _open_text(self, mark: str) -> list[BaseEvent]:
        out = self._close_reasoning()
        if self.text_id is None:
            self.text_id = self.last_text_id = f"msg-{mark}"
            out.append(TextMessageStartEvent(message_id=self.text_id, role="assistant"))
        return out

    def _text(self, delta: str) -> list[BaseEvent]:
        if not delta or self.text_id is None:  # AG-UI refuses an empty delta
            return []
        return [TextMessageContentEvent(message_id=self.text_id, delta=delta)]

    def _close_text(self) -> list[BaseEvent]:
        if self.text_id is None:
            return []
        done, self.text_id = self.text_id, None
        return [TextMessageEndEvent(message_id=done)]

    def _open_reasoning(self, mark: str) -> list[BaseEvent]:
        out = self._close_text()
        if self.reasoning_id is None:
            self.reasoning_id = f"reasoning-{mark}"
            out += [
                ReasoningStartEvent(message_id=self.reasoning_id),
                ReasoningMessageStartEvent(message_id=self.reasoning_id, role="reasoning"),
            ]
        return out

    def _reasoning(self, delta: str) -> list[BaseEvent]:
        if not delta or self.reasoning_id is None:
            return []
        return [ReasoningMessageContentEvent(message_id=self.reasoning_id, delta=delta)]

    def _close_reasoning(self) -> list[BaseEvent]:
        if self.reasoning_id is None:
            return []
        done, self.reasoning_id = self.reasoning_id, None
        return [ReasoningMessageEndEvent(message_id=done), ReasoningEndEvent(message_id=done)]

    def _close_all(self) -> list[BaseEvent]:
        return self._close_reasoning() + self._close_text()


def sse(event: BaseEvent, event_id: str | None = None) -> bytes:
    """One AG-UI event as a server-sent event (`id:` lets a client resume from it)."""
    head = f"id: {event_id}\n" if event_id else ""
    body = event.model_dump_json(by_alias=True, exclude_none=True)
    return f"{head}data: {body}\n\n".encode()
