"""`ScriptedModel`: a model that plays back a list of steps, for precise engine tests.

Each call to `stream` plays the next `Step`. A step is a sequence of parts: text,
reasoning, tool calls, a delay (an `asyncio.sleep`, so cancellation interrupts it), an
error, or raw chunks. A step may also be a function of the request it receives, so a test
can react to what the engine sent (for example, correct arguments after seeing an error).
Every request is kept in `.requests` for assertions.

    model = ScriptedModel([
        Step.tool_calls(call("get_weather", {"city": "Paris"}), reasoning="Look it up."),
        Step.text("It is sunny in Paris."),
    ])
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.errors import ModelError
from agentkit.events import Usage
from agentkit.models.base import (
    Finish,
    ModelChunk,
    ModelRequest,
    ReasoningDelta,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallChunk,
)
from agentkit.models.test import split_deltas
from agentkit.models.windows import estimate_tokens, request_chars


@dataclass(frozen=True, slots=True)
class Delay:
    """Wait this many seconds before the next part."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Fail:
    """Raise this error when reached (after any parts before it have streamed)."""

    error: ModelError


Part = ModelChunk | Delay | Fail
Responder = Callable[[ModelRequest], "Step | Sequence[Part]"]

_call_ids = itertools.count(1)


def text(*deltas: str) -> list[Part]:
    """Text parts, one delta each."""
    return [TextDelta(d) for d in deltas]


def reasoning(content: str, signature: str | None = None) -> list[Part]:
    """A reasoning block, streamed in a few deltas; the signature rides on the last."""
    pieces = split_deltas(content, 2) or [""]
    out: list[Part] = [ReasoningDelta(p) for p in pieces[:-1]]
    out.append(ReasoningDelta(pieces[-1], signature=signature))
    return out


def call(name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None) -> Part:
    """A complete tool call. Ids default to `scripted_<n>`, unique in the process."""
    return ToolCallChunk(ToolCall(id or f"scripted_{next(_call_ids)}", name, arguments or {}))


def delay(seconds: float) -> Part:
    return Delay(seconds)


def fail(message: str, *, retryable: bool = False, status: int | None = None) -> Part:
    return Fail(ModelError(message, retryable=retryable, status=status))


@dataclass(frozen=True, slots=True)
class Step:
    """One model step. Without an explicit `Finish` part, one is added at the end: stop
    reason `tool_use` when the step called tools, else `end_turn`; usage estimated from
    the request and the output unless `usage` is given."""

    parts: tuple[Part, ...] = ()
    usage: Usage | None = None
    stop_reason: StopReason | None = None
    responder: Responder | None = field(default=None, compare=False)

    @classmethod
    def of(cls, *parts: Part | Iterable[Part], usage: Usage | None = None) -> Step:
        """A step from parts (lists from `text(...)`/`reasoning(...)` are flattened)."""
        return cls(parts=_flatten(parts), usage=usage)

    @classmethod
    def text(cls, *deltas: str, reasoning: str | None = None, usage: Usage | None = None) -> Step:
        """A text reply in these deltas, after an optional reasoning block."""
        head = _reasoning(reasoning)
        return cls(parts=(*head, *text(*deltas)), usage=usage)

    @classmethod
    def tool_calls(
        cls,
        *calls: Part,
        text: str | None = None,
        reasoning: str | None = None,
        usage: Usage | None = None,
    ) -> Step:
        """Tool calls (built with `call(...)`), after optional reasoning and text."""
        head = [*_reasoning(reasoning), *([TextDelta(text)] if text else [])]
        return cls(parts=(*head, *calls), usage=usage)

    @classmethod
    def error(cls, message: str, *, retryable: bool = False, status: int | None = None) -> Step:
        """A step that fails at once with a `ModelError`."""
        return cls(parts=(fail(message, retryable=retryable, status=status),))

    @classmethod
    def delay(cls, seconds: float, then: Step | None = None) -> Step:
        """Wait, then play `then` (or a short text reply)."""
        rest = then.parts if then is not None else (TextDelta("done"),)
        return cls(parts=(Delay(seconds), *rest))

    @classmethod
    def respond(cls, fn: Responder) -> Step:
        """A step computed from the request: `fn(request)` returns a `Step` or parts."""
        return cls(responder=fn)


def _reasoning(content: str | None) -> list[Part]:
    return reasoning(content) if content else []


def _flatten(parts: Iterable[Part | Iterable[Part]]) -> tuple[Part, ...]:
    out: list[Part] = []
    for part in parts:
        if isinstance(part, TextDelta | ReasoningDelta | ToolCallChunk | Finish | Delay | Fail):
            out.append(part)
        else:
            out.extend(part)
    return tuple(out)


class ScriptedModel:
    """Plays `steps` in order, one per `stream` call; records every request."""

    def __init__(self, steps: Iterable[Step], *, model_id: str = "scripted") -> None:
        self._steps = list(steps)
        self._id = model_id
        self.requests: list[ModelRequest] = []

    @property
    def id(self) -> str:
        return self._id

    @property
    def remaining(self) -> int:
        """How many steps have not been played yet."""
        return len(self._steps) - len(self.requests)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Play the next step. Raises `ModelError` when the script has run out."""
        played = len(self.requests)
        self.requests.append(request)
        if played >= len(self._steps):
            raise ModelError(
                f"scripted model ran out of steps: it was given {len(self._steps)}, and this "
                f"is call #{played + 1}"
            )
        step = self._steps[played]
        if step.responder is not None:
            answer = step.responder(request)
            step = answer if isinstance(answer, Step) else Step.of(*answer)
        output_chars = 0
        saw_call = saw_finish = False
        for part in step.parts:
            if isinstance(part, Delay):
                await asyncio.sleep(part.seconds)
                continue
            if isinstance(part, Fail):
                raise part.error
            if isinstance(part, TextDelta | ReasoningDelta):
                output_chars += len(part.text)
            elif isinstance(part, ToolCallChunk):
                saw_call = True
                output_chars += len(part.call.name) + len(str(part.call.arguments))
            elif isinstance(part, Finish):
                saw_finish = True
            yield part
            await asyncio.sleep(0)
        if not saw_finish:
            usage = step.usage or Usage(
                input_tokens=estimate_tokens(request_chars(request)),
                output_tokens=max(1, estimate_tokens(output_chars)),
            )
            stop: StopReason = step.stop_reason or ("tool_use" if saw_call else "end_turn")
            yield Finish(stop_reason=stop, usage=usage)
