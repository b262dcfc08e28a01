"""The event vocabulary: the event types and their typed payloads (pydantic models).

Producers build an `EventDraft` from one of these payloads (`draft(TurnCompleted(...),
turn_id=...)`, in `wire`). Wire JSON is camelCase. Event types this version does not know
(written by a newer one) are kept as they are.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class EventType(StrEnum):
    SESSION_STARTED = "session.started"
    SESSION_FORKED = "session.forked"
    AB_ASSIGNED = "ab.assigned"
    AB_PAUSED = "ab.paused"
    SESSION_WAITING = "session.waiting"
    SESSION_COMPLETED = "session.completed"
    SESSION_FAILED = "session.failed"
    SESSION_PAUSED = "session.paused"
    SESSION_RESUMED = "session.resumed"
    SESSION_KILLED = "session.killed"
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
    CONTEXT_COMPACTED = "context.compacted"


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
    # `sha256:` of the manifest the session began on (`project.digest`); absent in
    # sessions recorded before it was kept.
    manifest_digest: str | None = None


class SessionForked(Payload):
    """First event of a fork: the events after it, up to `atIndex + 1`, are a copy of
    `fromSessionId`'s events `0..atIndex` (each one index later than in the original)."""

    type = EventType.SESSION_FORKED
    from_session_id: str
    at_index: int
    manifest_digest: str | None = None  # of the manifest the fork was made on


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
    reason: str | None = None  # `killed` when an operator killed the session


class SessionPaused(Payload):
    """The session was paused: no model call from now on, until `session.resumed`."""

    type = EventType.SESSION_PAUSED
    by: str | None = None  # the principal that paused it


class SessionResumed(Payload):
    type = EventType.SESSION_RESUMED
    by: str | None = None


class SessionKilled(Payload):
    """The session was killed: paused for good; `session.failed` (`killed`) follows."""

    type = EventType.SESSION_KILLED
    by: str | None = None


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
    `message.received` then carries the same `queueId`. With tracing on, `traceContext`
    holds the W3C headers of the request that queued it, whose trace its turn continues.
    """

    type = EventType.MESSAGE_QUEUED
    queue_id: str
    message: str
    principal: str | None = None
    source: str | None = None
    trace_context: dict[str, str] | None = None


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
    evidence: dict[str, Any] | None = None  # what the loop breaker saw (`loop_detected`)
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
    # Only on the result of a call a crash left in doubt (see docs/engine.md): "reconciled"
    # (the tool's `reconcile` said what happened), "rerun" (an idempotent tool ran again
    # with the same key) or "unknown" (nobody can tell; it was not run again).
    outcome: Literal["reconciled", "rerun", "unknown"] | None = None


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


class ContextCompacted(Payload):
    """The model's view of the conversation now starts after event `through_index`: a
    `summary` of what came before (strategy `summarize`), or nothing (`window`). The
    events themselves are kept; only the conversation fold reads this."""

    type = EventType.CONTEXT_COMPACTED
    through_index: int
    strategy: str  # "summarize" | "window"
    summary: str | None = None
    tokens_before: int
    tokens_after: int
    usage: Usage | None = None  # of the summary call
    cost_usd: float | None = None


PAYLOADS: dict[str, type[Payload]] = {
    cls.type.value: cls
    for cls in (
        SessionStarted,
        SessionForked,
        AbAssigned,
        AbPaused,
        SessionWaiting,
        SessionCompleted,
        SessionFailed,
        SessionPaused,
        SessionResumed,
        SessionKilled,
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
        ContextCompacted,
    )
}

TERMINAL_TURN_EVENTS = frozenset({EventType.TURN_COMPLETED, EventType.TURN_FAILED})
