"""One model step: stream a reply, coalesce deltas into events, collect tool calls.

The `StepSink` decides what streaming output becomes: the turn records it as events, a
subagent keeps it to itself. `interrupted` is checked between chunks, the safe point where
a stop request ends the step.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agentkit.engine.chat_telemetry import chat_span
from agentkit.engine.turn.recorder import DeltaBuffer
from agentkit.errors import ModelError, TurnInterrupted
from agentkit.events import (
    NO_USAGE,
    MessageAppended,
    MessageCompleted,
    Payload,
    ReasoningAppended,
    ReasoningCompleted,
    Usage,
)
from agentkit.models.base import (
    Finish,
    Model,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallChunk,
)


@runtime_checkable
class Closing(Protocol):
    """A model stream that can be closed early (an async generator)."""

    async def aclose(self) -> None: ...


@dataclass(slots=True)
class StepOutput:
    text: str = ""
    reasoning: str | None = None
    signature: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=lambda: NO_USAGE)
    stop_reason: str = "end_turn"


class StepSink:
    """Receives streamed output. The base class keeps it silent (used by subagents)."""

    async def reasoning(self, text: str) -> None:
        return None

    async def reasoning_done(self, text: str, signature: str | None) -> None:
        return None

    async def text(self, text: str) -> None:
        return None

    def closing(self, out: StepOutput) -> list[Payload]:
        """Payloads that finish the step's streamed output (recorded by the caller)."""
        return []


class RecordingSink(StepSink):
    """Turns streamed output into coalesced `reasoning.*` and `message.*` events."""

    def __init__(self, emit: Callable[..., Awaitable[None]]) -> None:
        self.emit = emit
        self.text_buf = DeltaBuffer(MessageAppended)
        self.reasoning_buf = DeltaBuffer(ReasoningAppended)

    async def reasoning(self, text: str) -> None:
        payload = self.reasoning_buf.add(text)
        if payload is not None:
            await self.emit(payload)

    async def reasoning_done(self, text: str, signature: str | None) -> None:
        rest = self.reasoning_buf.take()
        done = ReasoningCompleted(text=text, signature=signature)
        await self.emit(*([rest] if rest else []), done)
        self.reasoning_buf.reset()

    async def text(self, text: str) -> None:
        payload = self.text_buf.add(text)
        if payload is not None:
            await self.emit(payload)

    def closing(self, out: StepOutput) -> list[Payload]:
        rest = self.text_buf.take()
        self.text_buf.reset()
        if not out.text:
            return []
        return [*([rest] if rest else []), MessageCompleted(text=out.text)]


async def model_step(  # noqa: C901 - one branch per chunk kind
    model: Model,
    request: ModelRequest,
    sink: StepSink,
    interrupted: Callable[[], Awaitable[bool]],
) -> StepOutput:
    """Stream one step. Raises `TurnInterrupted` at a safe point, `ModelError` on failure."""
    out = StepOutput()
    reasoning: list[str] = []
    text: list[str] = []
    reasoning_open = False
    # Usage per provider message id: a repeated id replaces, never adds (see `Finish`).
    by_message: dict[str, Usage] = {}
    anonymous = NO_USAGE

    async def close_reasoning() -> None:
        nonlocal reasoning_open
        if reasoning_open:
            reasoning_open = False
            out.reasoning = "".join(reasoning)
            await sink.reasoning_done(out.reasoning, out.signature)

    with chat_span(model.id, request) as chat:
        stream = model.stream(request)
        try:
            async for chunk in stream:
                chat.chunk()
                if await interrupted():
                    raise TurnInterrupted()
                if isinstance(chunk, TextDelta):
                    await close_reasoning()
                    text.append(chunk.text)
                    await sink.text(chunk.text)
                elif isinstance(chunk, ReasoningDelta):
                    reasoning_open = True
                    reasoning.append(chunk.text)
                    if chunk.signature:
                        out.signature = chunk.signature
                    await sink.reasoning(chunk.text)
                elif isinstance(chunk, ToolCallChunk):
                    await close_reasoning()
                    out.calls.append(chunk.call)
                elif isinstance(chunk, Finish):
                    if chunk.message_id is None:
                        anonymous = anonymous + chunk.usage
                    else:
                        by_message[chunk.message_id] = chunk.usage
                    out.usage = sum(by_message.values(), anonymous)
                    out.stop_reason = chunk.stop_reason
        except (TurnInterrupted, ModelError):
            raise
        except Exception as exc:  # a provider bug must end the turn, not crash the host
            raise ModelError(f"model {model.id} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            if isinstance(stream, Closing):  # an async generator: its `finally` runs now
                await stream.aclose()
        await close_reasoning()
        out.text = "".join(text)
        chat.finish(out.usage, out.stop_reason, out.text, out.calls)
    return out
