"""`TestModel`: a deterministic, offline model so every engine path runs with no keys.

The rule, step by step:

- The last message is the user's and tools are offered: emit a short reasoning block, then
  call tools with arguments generated from their JSON Schemas (schema-valid; string fields
  named like `city` or `query` take words from the message). Which tools: every offered
  tool with a word of its name (three letters or more, ignoring `get`, `set`, `list` and the
  like) in the user's message, in the order offered, at most three; when none matches, the
  first offered tool. The built-in `load_skill`, `read_skill_file` and `task` are only
  considered when nothing else is offered.
- The last messages are tool results: answer with text that quotes each result (or error).
- Otherwise: answer with text derived from the last user message.

Text streams in several deltas. Usage is estimated at one token per four characters.

When the request carries the agent's declared `context_window`, a request estimated past it
fails as a real provider's "prompt is too long" 400 does: a `ModelError`, not retryable.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections.abc import AsyncIterator, Sequence

from agentkit.authoring.tools import BUILTIN_TOOL_NAMES
from agentkit.errors import ModelError
from agentkit.events import Usage
from agentkit.models._schema_values import example_arguments, field_words, word_set
from agentkit.models.base import (
    Finish,
    Message,
    ModelChunk,
    ModelRequest,
    ReasoningDelta,
    StopReason,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    ToolSchema,
    UserMessage,
)
from agentkit.models.windows import estimate_tokens, prompt_too_long, request_chars, window_for

BUILTIN_TOOLS = BUILTIN_TOOL_NAMES
CONTEXT_WINDOWS: dict[str, int] = {"": 200_000}  # one model; as large as a real one
MAX_CALLS = 3
_VAGUE_WORDS = word_set("get set list fetch make run do the and for tool with from new add")


def split_deltas(text: str, parts: int = 4) -> list[str]:
    """Cut text into about `parts` deltas on word boundaries (joined, they give `text`)."""
    pieces = re.findall(r"\S+\s*|\s+", text)
    if not pieces:
        return []
    size = max(1, math.ceil(len(pieces) / parts))
    return ["".join(pieces[i : i + size]) for i in range(0, len(pieces), size)]


def choose_tools(tools: Sequence[ToolSchema], message: str) -> list[ToolSchema]:
    """The tools the test model calls for this message (see the module docstring)."""
    regular = [t for t in tools if t.name not in BUILTIN_TOOLS]
    pool = regular or list(tools)
    said = {w.rstrip("s") for w in field_words(message)}
    chosen = [
        tool
        for tool in pool
        if any(
            len(w) >= 3 and w not in _VAGUE_WORDS and w.rstrip("s") in said
            for w in field_words(tool.name)
        )
    ]
    return chosen[:MAX_CALLS] or pool[:1]


def _snippet(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class TestModel:
    """The `test` provider. Same request in, same chunks out, with no network."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, model_id: str = "test") -> None:
        self._id = model_id

    @property
    def id(self) -> str:
        return self._id

    @property
    def context_window(self) -> int:
        """The window of the model id (the `test` model has one, as large as a real one)."""
        return window_for(CONTEXT_WINDOWS, "")

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        """Stream one deterministic step for `request`."""
        chunks = self.respond(request)
        for chunk in chunks:
            yield chunk
            # A real provider yields to the loop between chunks; so do we, so that a stop
            # request can land mid-stream.
            await asyncio.sleep(0)

    def respond(self, request: ModelRequest) -> list[ModelChunk]:
        """All chunks of the step at once (what `stream` yields, in order)."""
        input_tokens = estimate_tokens(request_chars(request))
        window = request.context_window
        if window is not None and input_tokens > window:
            raise ModelError(prompt_too_long(input_tokens, window), retryable=False, status=400)
        messages = request.messages
        stop: StopReason
        last = messages[-1] if messages else None
        if isinstance(last, UserMessage) and request.tools:
            out = self._call_tools(request, last.text)
            stop = "tool_use"
        elif isinstance(last, ToolResultMessage):
            out = [TextDelta(t) for t in split_deltas(self._summarise(messages))]
            stop = "end_turn"
        else:
            text = last.text if isinstance(last, UserMessage) else ""
            reply = f'You said: "{_snippet(text)}". (This is the offline test model.)'
            out = [TextDelta(t) for t in split_deltas(reply)]
            stop = "end_turn"
        usage = Usage(
            input_tokens=input_tokens,
            output_tokens=max(1, estimate_tokens(_output_chars(out))),
        )
        return [*out, Finish(stop_reason=stop, usage=usage)]

    def _call_tools(self, request: ModelRequest, text: str) -> list[ModelChunk]:
        tools = choose_tools(request.tools, text)
        names = ", ".join(t.name for t in tools)
        # Ids must differ across turns and between a parent and its subagent in one session.
        seed = f"{len(request.messages)}|{request.system}|{text}".encode()
        tag = hashlib.sha256(seed).hexdigest()[:10]
        thought = f"The user asked: {_snippet(text, 120)} I will call {names} to answer."
        out: list[ModelChunk] = [ReasoningDelta(t) for t in split_deltas(thought, 2)]
        for i, tool in enumerate(tools):
            call = ToolCall(
                id=f"call_{tag}_{i}",
                name=tool.name,
                arguments=example_arguments(tool.input_schema, text),
            )
            out.append(ToolCallChunk(call))
        return out

    @staticmethod
    def _summarise(messages: Sequence[Message]) -> str:
        results: list[ToolResultMessage] = []
        for message in reversed(messages):
            if not isinstance(message, ToolResultMessage):
                break
            results.insert(0, message)
        parts = [
            f"{r.tool_name} failed: {_snippet(r.content)}"
            if r.is_error
            else f"{r.tool_name} returned {_snippet(r.content)}"
            for r in results
        ]
        return "Here is what I found: " + "; ".join(parts) + "."


def _output_chars(chunks: Sequence[ModelChunk]) -> int:
    total = 0
    for chunk in chunks:
        if isinstance(chunk, TextDelta | ReasoningDelta):
            total += len(chunk.text)
        elif isinstance(chunk, ToolCallChunk):
            total += len(chunk.call.name) + len(json.dumps(chunk.call.arguments))
    return total
