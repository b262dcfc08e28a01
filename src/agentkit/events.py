"""The event vocabulary: every session is an append-only, gap-free stream of these.

The envelope is `{type, index, sessionId, turnId?, at, data}`. Producers build an
`EventDraft` from a typed payload (`draft(TurnCompleted(...), turn_id=...)`); the store
assigns the next `index` when it appends and returns `Event`s. Wire JSON is camelCase.
Event types this version does not know (written by a newer one) are kept as they are.
"""

from __future__ import annotations

import builtins
import json
import time
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

import msgspec
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class EventType(StrEnum):
    SESSION_STARTED = "session.started"
    AB_ASSIGNED = "ab.assigned"
    AB_PAUSED = "ab.paused"
    SESSION_WAITING = "session.waiting"
    SESSION_COMPLETED = "session.completed"
    SESSION_FAILED = "session.failed"
    AGENT_BOUND = "agent.bound"
    MESSAGE_RECEIVED = "message.received"
    MESSAGE_QUEUED = "message.queued"
    TURN_STARTED = "turn.started"
    TURN_COMPLETED = "turn.completed"
    TURN_FAILED = "turn.failed"
    STEP_STARTED = "step.started"
    STEP_COMPLETED = "step.completed"
    REASONING_APPENDED = "reasoning.appended"
    REASONING_COMPLETED = "reasoning.completed"
    MESSAGE_APPENDED = "message.appended"
    MESSAGE_COMPLETED = "message.completed"
    ACTIONS_REQUESTED = "actions.requested"
    ACTION_STARTED = "action.started"
    ACTION_RESULT = "action.result"
    ACTION_APPROVAL_REQUESTED = "action.approval_requested"
    ACTION_APPROVAL_RESOLVED = "action.approval_resolved"
    SUBAGENT_CALLED = "subagent.called"
    SUBAGENT_COMPLETED = "subagent.completed"


class Payload(BaseModel):
    """Base of the typed event payloads. Extra keys survive a round trip."""

    # defer_build: each payload's validator is built on its first use, so a process that
    # only ever meets a few event types (a cold start) does not build all of them.
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        frozen=True,
        defer_build=True,
    )
    type: ClassVar[EventType]

    def wire(self) -> dict[str, Any]:
        # `model_dump(by_alias=True, exclude_none=True, mode="json")`, without its wrapper:
        # every recorded event is dumped once.
        out: dict[str, Any] = self.__pydantic_serializer__.to_python(
            self, by_alias=True, exclude_none=True, mode="json"
        )
        return out


class Usage(BaseModel):
    """Token counts of one model call, one step or one turn."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def _is_zero(self) -> bool:
        return not (
            self.input_tokens
            or self.output_tokens
            or self.cache_read_tokens
            or self.cache_write_tokens
        )

    def __add__(self, other: Usage) -> Usage:
        # Adding nothing is common (a turn's first step, a usage counted once): the other
        # side as it is, instead of a new equal one (usages are immutable).
        if type(self) is Usage and type(other) is Usage:
            if other._is_zero():
                return self
            if self._is_zero():
                return other
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


NO_USAGE = Usage()  # usages are immutable: one zero serves every step and fold


class SessionStarted(Payload):
    type = EventType.SESSION_STARTED
    channel_id: str
    mode: str
    principal: str | None = None
    agent: str | None = None


class AbAssigned(Payload):
    type = EventType.AB_ASSIGNED
    experiment: str
    variant: str


class AbPaused(Payload):
    """A guardrail paused a variant: new sessions go to the control arm from now on."""

    type = EventType.AB_PAUSED
    experiment: str
    variant: str
    reason: str


class SessionWaiting(Payload):
    type = EventType.SESSION_WAITING


class SessionCompleted(Payload):
    type = EventType.SESSION_COMPLETED
    result: str | None = None


class SessionFailed(Payload):
    type = EventType.SESSION_FAILED
    error: str


class AgentBound(Payload):
    """Once per session: the agent (its slug), the runtime it was bound to, its URLs."""

    type = EventType.AGENT_BOUND
    agent_id: str
    model: str | None = None
    url: str | None = None  # the session's API path, as `urls["session"]`
    runtime: str | None = None  # "local" or "lambda"
    function_name: str | None = None  # on Lambda: the function that bound it
    urls: dict[str, str] | None = None  # session, stream, events, playground


class MessageReceived(Payload):
    type = EventType.MESSAGE_RECEIVED
    message: str
    principal: str | None = None
    source: str | None = None  # "http", "reminder", "schedule", a channel id, ...
    workspace_files: list[str] | None = None
    queue_id: str | None = None  # set when the message waited as `message.queued`


class MessageQueued(Payload):
    """A message for a busy session, waiting to become a turn (`on_busy="queue"`).

    It has no turn id and is not part of the conversation until it is accepted: its
    `message.received` then carries the same `queueId`.
    """

    type = EventType.MESSAGE_QUEUED
    queue_id: str
    message: str
    principal: str | None = None
    source: str | None = None


class TurnStarted(Payload):
    type = EventType.TURN_STARTED
    model: str | None = None


class TurnCompleted(Payload):
    type = EventType.TURN_COMPLETED
    result: str
    usage: Usage = Usage()
    cost_usd: float | None = None  # absent when the model's price is unknown


class TurnFailed(Payload):
    type = EventType.TURN_FAILED
    error: str
    usage: Usage | None = None
    cost_usd: float | None = None


class StepStarted(Payload):
    type = EventType.STEP_STARTED
    step: int


class StepCompleted(Payload):
    type = EventType.STEP_COMPLETED
    step: int
    duration_ms: int
    usage: Usage | None = None
    stop_reason: str | None = None
    cost_usd: float | None = None


class ReasoningAppended(Payload):
    type = EventType.REASONING_APPENDED
    text: str


class ReasoningCompleted(Payload):
    type = EventType.REASONING_COMPLETED
    text: str
    signature: str | None = None


class MessageAppended(Payload):
    type = EventType.MESSAGE_APPENDED
    text: str


class MessageCompleted(Payload):
    type = EventType.MESSAGE_COMPLETED
    text: str


class ActionCall(BaseModel):
    """One tool call as the model asked for it."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)
    call_id: str
    tool_name: str
    arguments: dict[str, Any]


class ActionsRequested(Payload):
    type = EventType.ACTIONS_REQUESTED
    actions: list[ActionCall]


class ActionStarted(Payload):
    """Durable before a decided (approved) call runs: a started call with no result is in
    doubt after a crash, and is never run again."""

    type = EventType.ACTION_STARTED
    call_id: str
    tool_name: str


class ActionResult(Payload):
    type = EventType.ACTION_RESULT
    call_id: str
    tool_name: str
    is_error: bool = False
    result: Any = None
    error: str | None = None
    duration_ms: int | None = None


class ActionApprovalRequested(Payload):
    type = EventType.ACTION_APPROVAL_REQUESTED
    call_id: str
    tool_name: str
    arguments: dict[str, Any]


class ActionApprovalResolved(Payload):
    type = EventType.ACTION_APPROVAL_RESOLVED
    call_id: str
    decision: str  # "approve" | "deny"
    principal: str | None = None


class SubagentCalled(Payload):
    type = EventType.SUBAGENT_CALLED
    call_id: str
    subagent: str
    prompt: str


class SubagentCompleted(Payload):
    type = EventType.SUBAGENT_COMPLETED
    call_id: str
    subagent: str
    result: str | None = None
    error: str | None = None
    usage: Usage = Usage()
    cost_usd: float | None = None


PAYLOADS: dict[str, type[Payload]] = {
    cls.type.value: cls
    for cls in (
        SessionStarted,
        AbAssigned,
        AbPaused,
        SessionWaiting,
        SessionCompleted,
        SessionFailed,
        AgentBound,
        MessageReceived,
        MessageQueued,
        TurnStarted,
        TurnCompleted,
        TurnFailed,
        StepStarted,
        StepCompleted,
        ReasoningAppended,
        ReasoningCompleted,
        MessageAppended,
        MessageCompleted,
        ActionsRequested,
        ActionStarted,
        ActionResult,
        ActionApprovalRequested,
        ActionApprovalResolved,
        SubagentCalled,
        SubagentCompleted,
    )
}

P = TypeVar("P", bound=Payload)


def iso_utc(moment: datetime) -> str:
    """`moment` in UTC as ISO-8601 with milliseconds and a `Z` (a naive time is UTC).

    The one timestamp form of events and stored records.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# The text of the last whole second `now_iso` formatted: (epoch second, "YYYY-MM-DDTHH:MM:SS").
# Every event is stamped, so the date part is formatted once a second, not once an event.
_SECOND: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """The current UTC time as ISO-8601 with milliseconds and a `Z` (as `iso_utc` writes
    it; milliseconds are truncated, never rounded up)."""
    global _SECOND
    ms = time.time_ns() // 1_000_000
    second, text = _SECOND
    if ms // 1000 != second:
        second = ms // 1000
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _SECOND = (second, text)
    return f"{text}.{ms % 1000:03d}Z"


_ENCODER = msgspec.json.Encoder()
_RAW_BREAKS = (
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
    ("\u0085".encode(), b"\\u0085"),
)

# Characters JSON leaves raw inside strings but line splitters treat as line ends.
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\u0085": "\\u0085"})


def escape_line_breaks(json_text: str) -> str:
    """JSON text with U+2028, U+2029 and U+0085 escaped (they occur only inside strings)."""
    return json_text.translate(_LINE_BREAKS)


class EventDraft(msgspec.Struct, frozen=True, gc=False):
    """An event before the store has given it an index.

    A frozen msgspec struct, like `Event`: every recorded event is drafted first, and one is
    built in C several times faster than a frozen dataclass sets its fields."""

    type: str
    data: dict[str, Any]
    turn_id: str | None = None
    at: str = msgspec.field(default_factory=now_iso)


def draft(payload: Payload, *, turn_id: str | None = None, at: str | None = None) -> EventDraft:
    """Build a draft event from a typed payload."""
    return EventDraft(
        type=payload.type.value, data=payload.wire(), turn_id=turn_id, at=at or now_iso()
    )


class Event(
    msgspec.Struct,
    frozen=True,
    gc=False,
    rename={"session_id": "sessionId", "turn_id": "turnId"},
):
    """A recorded event. `data` is the wire payload; `payload()` parses it.

    A frozen msgspec struct rather than a dataclass: a store's replay decodes the JSON
    lines straight into these in C, several times faster than building them in Python
    (see `decode_events`). The envelope's types are checked as it decodes; the payload is
    parsed by pydantic only when someone asks (`payload()`, `as_()`): events the store
    reads back were validated when they were written. (`gc=False`: an event never refers
    back to itself, so the garbage collector need not track the thousands a replay makes.)
    """

    type: str
    index: int
    session_id: str
    at: str
    data: dict[str, Any]
    turn_id: str | None = None

    @property
    def known(self) -> bool:
        """False for event types this version does not know (kept, never dropped)."""
        return self.type in PAYLOADS

    def payload(self) -> Payload | None:
        """The typed payload, or None for an unknown event type."""
        cls = PAYLOADS.get(self.type)
        return cls.model_validate(self.data) if cls else None

    def as_(self, cls: builtins.type[P]) -> P:
        """The payload parsed as `cls`; raises if the type does not match."""
        if self.type != cls.type.value:
            raise TypeError(f"event {self.index} is {self.type}, not {cls.type.value}")
        return cls.model_validate(self.data)

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "index": self.index,
            "sessionId": self.session_id,
        }
        if self.turn_id is not None:
            out["turnId"] = self.turn_id
        out["at"] = self.at
        out["data"] = self.data
        return out

    def to_json(self) -> str:
        """One NDJSON line (without the newline).

        U+2028, U+2029 and U+0085 are written as JSON escapes: they are line breaks to
        `str.splitlines` (and to readers built on it), so raw they could split the line.
        """
        return self.to_line()[:-1].decode("utf-8")

    def to_line(self) -> bytes:
        """One NDJSON line as UTF-8 bytes, newline included.

        Text may carry lone surrogates (a tool's undecodable file name, say), which UTF-8
        cannot encode; such an event is written with JSON escapes instead, losslessly.
        """
        wire = self.to_wire()
        try:
            line = _ENCODER.encode(wire)
        except (UnicodeEncodeError, TypeError, OverflowError, msgspec.EncodeError):
            # Lone surrogates, huge integers, NaN and such: the standard library's rules.
            text = json.dumps(wire, separators=(",", ":"), ensure_ascii=True)
            return text.encode("ascii") + b"\n"
        # Most lines are ASCII: one pass says so, where three searches cost more than the
        # encoding itself.
        if not line.isascii() and (
            b"\xe2\x80\xa8" in line or b"\xe2\x80\xa9" in line or b"\xc2\x85" in line
        ):
            # Only these code points encode to these bytes in UTF-8, so this is exact.
            for raw, escaped in _RAW_BREAKS:
                line = line.replace(raw, escaped)
        return line + b"\n"

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> Event:
        return cls(
            type=str(raw["type"]),
            index=int(raw["index"]),
            session_id=str(raw["sessionId"]),
            turn_id=raw.get("turnId"),
            at=str(raw["at"]),
            data=dict(raw.get("data") or {}),
        )

    @classmethod
    def from_json(cls, line: str | bytes) -> Event:
        return cls.from_wire(json.loads(line))

    @classmethod
    def from_draft(cls, d: EventDraft, *, session_id: str, index: int) -> Event:
        return cls(
            type=d.type,
            index=index,
            session_id=session_id,
            at=d.at,
            data=d.data,
            turn_id=d.turn_id,
        )


TERMINAL_TURN_EVENTS = frozenset({EventType.TURN_COMPLETED, EventType.TURN_FAILED})
