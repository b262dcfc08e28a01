"""Context windows: how many tokens a model takes in, and how many a request needs.

Each provider module names the windows of the model ids it knows in a table of id prefixes
(`CONTEXT_WINDOWS`); its model objects answer `context_window` from it, with
`DEFAULT_WINDOW` for ids the table does not know. The engine asks `model_window`, which
also serves models that say nothing (scripted models, models of an agent's own).

Tokens are estimated, not counted: about one token per four characters, the same rule the
`test` model reports usage with. It needs no tokenizer and errs on the large side for
English text, which is the side that keeps a request inside the window.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

from agentkit.models.base import (
    AssistantMessage,
    Message,
    Model,
    ModelRequest,
    ToolResultMessage,
)

DEFAULT_WINDOW = 128_000
"""The window assumed for a model id no table knows (most current models take more)."""


def window_for(table: Mapping[str, int], name: str, default: int = DEFAULT_WINDOW) -> int:
    """The window of model `name` in `table`: the entry with the longest prefix of it."""
    best: str | None = None
    for prefix in table:
        if name.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return table[best] if best is not None else default


def model_window(model: Model) -> int:
    """The context window of `model`, from its provider's table, else `DEFAULT_WINDOW`."""
    window = getattr(model, "context_window", None)
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        return window
    return DEFAULT_WINDOW


def estimate_tokens(chars: int) -> int:
    """About one token per four characters, at least one for anything non-empty."""
    return math.ceil(chars / 4)


def message_chars(message: Message) -> int:
    """How many characters one message sends."""
    if isinstance(message, AssistantMessage):
        calls = sum(len(c.name) + len(json.dumps(c.arguments)) for c in message.tool_calls)
        return len(message.text) + len(message.reasoning or "") + calls
    if isinstance(message, ToolResultMessage):
        return len(message.content)
    return len(message.text)


def messages_tokens(messages: Sequence[Message]) -> int:
    """The estimated tokens of `messages`."""
    return estimate_tokens(sum(message_chars(m) for m in messages))


def request_chars(request: ModelRequest) -> int:
    """How many characters a request sends: system prompt, history and tool schemas."""
    total = len(request.system) + sum(message_chars(m) for m in request.messages)
    for tool in request.tools:
        total += len(tool.name) + len(tool.description) + len(json.dumps(tool.input_schema))
    return total


def request_tokens(request: ModelRequest) -> int:
    """The estimated input tokens of `request`."""
    return estimate_tokens(request_chars(request))


def prompt_too_long(tokens: int, window: int) -> str:
    """The message a provider gives a request past the window (as Anthropic words it)."""
    return f"prompt is too long: {tokens} tokens > {window} maximum"


__all__ = [
    "DEFAULT_WINDOW",
    "estimate_tokens",
    "message_chars",
    "messages_tokens",
    "model_window",
    "prompt_too_long",
    "request_chars",
    "request_tokens",
    "window_for",
]
