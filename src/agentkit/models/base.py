"""The model port: a provider streams text, reasoning, tool calls, a stop reason and usage.

The engine folds a session's events into `Message`s, asks a `Model` to `stream` a reply for
a `ModelRequest`, and records what comes back as events. Provider modules translate these
types to and from their wire format; nothing else in the engine knows a provider.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from agentkit.events import Usage

# ---- conversation -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class UserMessage:
    text: str
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    text: str = ""
    reasoning: str | None = None
    reasoning_signature: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = "assistant"


@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    call_id: str
    tool_name: str
    content: str  # JSON text of the result, or the error message
    is_error: bool = False
    role: Literal["tool"] = "tool"


Message = UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True, slots=True)
class ToolSchema:
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    system: str
    messages: list[Message]
    tools: list[ToolSchema] = field(default_factory=list)
    max_tokens: int = 4096
    # The window the agent declared (`define_agent(context_window=N)`), when it declared
    # one. Real providers know their own limits; the `test` model enforces this one.
    context_window: int | None = None


# ---- stream -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A complete tool call (providers assemble streamed argument fragments first)."""

    call: ToolCall


StopReason = Literal["end_turn", "tool_use", "max_tokens", "error", "other"]


@dataclass(frozen=True, slots=True)
class Finish:
    stop_reason: StopReason
    usage: Usage
    # The provider's message id, when it has one: a stream may repeat the usage of one
    # message on several chunks, and the engine counts each message id once.
    message_id: str | None = field(default=None, compare=False)


ModelChunk = TextDelta | ReasoningDelta | ToolCallChunk | Finish


class Model(Protocol):
    """A provider bound to one model id (`provider:model`)."""

    @property
    def id(self) -> str: ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one model step. Raises `ModelError` with a message a person can act on."""
        ...
