"""The AI SDK UI message stream (`x-vercel-ai-ui-message-stream: v1`): a turn's events as
the stream parts `useChat` and `readUIMessageStream` read.

One response is one turn, or the part of one up to where it parks on approvals: each
parked call is a `tool-approval-request` part, and the next request carries the
client's answer (`approval-responded` on that tool part). Part ids come from our event
indexes, so a replay yields the same parts.
"""

from __future__ import annotations

import json
from typing import Any

from agentkit.events import Event, EventType
from agentkit.protocols._wire import sse_json

Part = dict[str, Any]
HEADERS = {
    "x-vercel-ai-ui-message-stream": "v1",
    "cache-control": "no-store",
    "x-accel-buffering": "no",
}


def approval_id(session_id: str, call_id: str) -> str:
    """An approval names its session too, so the answer finds it with no other lookup."""
    return f"{session_id}/{call_id}"


def sse(part: Part | str) -> bytes:
    """One stream part as a server-sent event (`[DONE]` ends the stream)."""
    body = part if isinstance(part, str) else sse_json(part)
    return f"data: {body}\n\n".encode()


class UiMessageRun:
    """Translates one turn's events into the parts of one assistant message."""

    def __init__(
        self, session_id: str, turn_id: str, *, quiet_through: int = -1, carry_through: int = -1
    ) -> None:
        self.session_id = session_id
        self.turn_id = turn_id
        self.quiet_through = quiet_through
        # A resumed stream replays the turn as one message: the parks it already got past
        # (at or before this index) end a step, not the response.
        self.carry_through = carry_through
        self.done = False
        self.open: dict[str, str] = {}  # "text" / "reasoning" -> the open part's id
        self.parked = False

    def start(self) -> Part:
        return {"type": "start", "messageId": f"msg-{self.turn_id}"}

    def feed(self, event: Event) -> list[Part]:
        """The parts for one of our events (none for another turn's, or a quiet one)."""
        if self.done or event.turn_id != self.turn_id:
            return []
        out = self._translate(event)
        return out if event.index > self.quiet_through else []

    def _translate(self, ev: Event) -> list[Part]:
        t, d = ev.type, ev.data
        mark = f"{self.turn_id}-{ev.index}"
        text = str(d.get("text") or "")
        if t in (EventType.MESSAGE_APPENDED, EventType.MESSAGE_COMPLETED):
            return self._streamed("text", text, mark, t == EventType.MESSAGE_COMPLETED)
        if t in (EventType.REASONING_APPENDED, EventType.REASONING_COMPLETED):
            return self._streamed("reasoning", text, mark, t == EventType.REASONING_COMPLETED)
        if t == EventType.STEP_STARTED:
            return [{"type": "start-step"}]
        if t == EventType.ACTIONS_REQUESTED:
            return self._close_all() + self._tool_calls(d.get("actions") or [])
        if t == EventType.ACTION_RESULT:
            return [_tool_output(d)]
        if t == EventType.ACTION_APPROVAL_REQUESTED:
            self.parked = True
            call_id = str(d.get("callId"))
            aid = approval_id(self.session_id, call_id)
            return [{"type": "tool-approval-request", "approvalId": aid, "toolCallId": call_id}]
        if t == EventType.STEP_COMPLETED:
            out = [*self._close_all(), {"type": "finish-step"}]
            if self.parked:
                self.parked = False
                if ev.index <= self.carry_through:
                    return out
                self._end(ev)
                out.append({"type": "finish", "finishReason": "tool-calls"})
            return out
        if t == EventType.TURN_COMPLETED:
            self._end(ev)
            return [*self._close_all(), {"type": "finish", "finishReason": "stop"}]
        if t == EventType.TURN_FAILED:
            self._end(ev)
            error = {"type": "error", "errorText": str(d.get("error") or "turn failed")}
            return [*self._close_all(), error, {"type": "finish", "finishReason": "error"}]
        return []

    def _end(self, ev: Event) -> None:
        self.done = ev.index > self.quiet_through

    def _streamed(self, kind: str, text: str, mark: str, whole: bool) -> list[Part]:
        """Deltas as they come; the whole text when no delta came before it."""
        out = self._close(_OTHER[kind])
        opened = kind not in self.open
        if opened:
            self.open[kind] = f"{kind}-{mark}"
            out.append({"type": f"{kind}-start", "id": self.open[kind]})
        if text and (opened or not whole):
            out.append({"type": f"{kind}-delta", "id": self.open[kind], "delta": text})
        return out + (self._close(kind) if whole else [])

    def _close(self, kind: str) -> list[Part]:
        part_id = self.open.pop(kind, None)
        return [] if part_id is None else [{"type": f"{kind}-end", "id": part_id}]

    def _close_all(self) -> list[Part]:
        return self._close("reasoning") + self._close("text")

    def _tool_calls(self, actions: list[dict[str, Any]]) -> list[Part]:
        out: list[Part] = []
        for action in actions:
            call_id, name = str(action.get("callId")), str(action.get("toolName"))
            arguments = action.get("arguments") or {}
            out += [
                {"type": "tool-input-start", "toolCallId": call_id, "toolName": name},
                {
                    "type": "tool-input-delta",
                    "toolCallId": call_id,
                    "inputTextDelta": json.dumps(arguments, ensure_ascii=False),
                },
                {
                    "type": "tool-input-available",
                    "toolCallId": call_id,
                    "toolName": name,
                    "input": arguments,
                },
            ]
        return out


_OTHER = {"text": "reasoning", "reasoning": "text"}


def _tool_output(d: dict[str, Any]) -> Part:
    call_id = str(d.get("callId"))
    if d.get("isError"):
        error = str(d.get("error") or d.get("result") or "tool failed")
        return {"type": "tool-output-error", "toolCallId": call_id, "errorText": error}
    return {"type": "tool-output-available", "toolCallId": call_id, "output": d.get("result")}
