"""Compaction: keep every model request inside the model's context window.

Before each step the turn loop hands its request to `ContextKeeper.fit`. When the request
would pass `compact_at` of the window, the oldest whole turns give way:

- `summarize` asks the agent's model (or `compaction_model`) for a summary of them; a
  failed or empty summary falls back to `window`, once, in the same step;
- `window` drops them.

Either way one durable `context.compacted` event records it, and the conversation fold
reads that event from then on (see `engine.folds.compacted_view`): a fresh process folding the
stream sees the same conversation as the process that compacted. The events themselves are
never rewritten.

A request compacts at most once per step, and only whole turns before the current one are
ever compacted, so nothing loops: when what is left still does not fit the window, or the
strategy is `off`, the turn ends with a `context_exceeded` error. A tool result past
`max_tool_result_tokens` is shortened in the request only, with a note saying so.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from agentkit.authoring.context_options import ContextOptions
from agentkit.costs import PriceTable
from agentkit.engine.folds.compacted_view import SUMMARY_HEADING, TurnEnd, compacted_note
from agentkit.engine.folds.conversation import fold_view
from agentkit.engine.turn.step import StepSink, model_step
from agentkit.errors import LeaseLost, RunError, TurnInterrupted
from agentkit.events import NO_USAGE, ContextCompacted, Event, Payload, Usage
from agentkit.models.base import (
    AssistantMessage,
    Message,
    Model,
    ModelRequest,
    ToolResultMessage,
    UserMessage,
)
from agentkit.models.windows import (
    estimate_tokens,
    messages_tokens,
    model_window,
    request_tokens,
)

CONTEXT_EXCEEDED = "context_exceeded"
KEEP_SHARE = 0.5  # after compacting, the request takes about this share of `compact_at`
SUMMARY_SHARE = 10  # a summary may take a tenth of the window
SUMMARY_MAX_TOKENS = 2048
TRANSCRIPT_RESULT_CHARS = 1000  # how much of one tool result the summarizer reads
SUMMARY_PROMPT = (
    "You compact a conversation between a user and an AI assistant that uses tools. "
    "Write a concise summary of the transcript you are given: the user's goals and "
    "requests, decisions made, facts learned from tool results, open questions and what "
    "was promised. Keep names, ids, numbers and paths exactly. Write only the summary."
)


class ContextExceeded(RunError):
    """The conversation cannot be fitted into the model's context window."""


@dataclass(frozen=True, slots=True)
class Fitted:
    """A request that fits, and what fitting it spent (a summary call's usage and cost)."""

    request: ModelRequest
    usage: Usage = NO_USAGE
    cost_usd: float | None = 0.0


@dataclass(frozen=True, slots=True)
class _Summary:
    text: str | None
    usage: Usage | None = None
    cost_usd: float | None = None
    error: str | None = None


def shorten_results(messages: Sequence[Message], limit_tokens: int) -> list[Message]:
    """`messages` with each tool result past `limit_tokens` cut down, with a note saying so."""
    limit = limit_tokens * 4
    out: list[Message] = []
    for message in messages:
        if isinstance(message, ToolResultMessage) and len(message.content) > limit:
            note = (
                f"\n[result shortened for the model: {len(message.content)} characters in"
                " all; the session's events keep the full result]"
            )
            shown = message.content[: max(0, limit - len(note))]
            message = replace(message, content=shown + note)
        out.append(message)
    return out


def transcript(messages: Sequence[Message], budget_chars: int) -> str:
    """The messages as plain text for the summarizer, at most `budget_chars` long (the
    most recent part is kept when it must be cut)."""
    lines: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            lines.append(f"User: {m.text}")
        elif isinstance(m, AssistantMessage):
            if m.text:
                lines.append(f"Assistant: {m.text}")
            for c in m.tool_calls:
                lines.append(f"Assistant called {c.name}({json.dumps(c.arguments)})")
        else:
            content = m.content
            if len(content) > TRANSCRIPT_RESULT_CHARS:
                content = content[:TRANSCRIPT_RESULT_CHARS] + " [...]"
            kind = "failed" if m.is_error else "returned"
            lines.append(f"Tool {m.tool_name} {kind}: {content}")
    text = "\n".join(lines)
    if len(text) > budget_chars:
        text = "[earlier part omitted]\n" + text[len(text) - budget_chars :]
    return text


def choose_cut(
    messages: Sequence[Message], ends: Sequence[TurnEnd], fixed: int, target: int
) -> TurnEnd | None:
    """The turn end to compact through: the earliest that brings the request to `target`
    tokens (`fixed` is what the request takes besides its messages), else the latest."""
    usable = [(index, count) for index, count in ends if 0 < count <= len(messages)]
    if not usable:
        return None
    for index, count in usable:
        if fixed + messages_tokens(messages[count:]) <= target:
            return index, count
    return usable[-1]


class ContextKeeper:
    """Fits one turn's requests into the window (see the module docstring)."""

    def __init__(
        self,
        options: ContextOptions,
        model: Model,
        resolve_model: Callable[[str | None], Model],
        prices: PriceTable,
        events: list[Event],
        emit: Callable[..., Awaitable[None]],
        interrupted: Callable[[], Awaitable[bool]],
    ) -> None:
        self.options = options
        self.model = model
        self.resolve_model = resolve_model
        self.prices = prices
        self.events = events
        self.emit = emit
        self.interrupted = interrupted
        self.window = options.context_window or model_window(model)

    def _view(self, request: ModelRequest, messages: Sequence[Message]) -> ModelRequest:
        limit = self.options.tool_result_limit(self.window)
        return replace(
            request,
            messages=shorten_results(messages, limit),
            context_window=self.options.context_window,
        )

    async def fit(self, request: ModelRequest) -> Fitted:
        """`request` as it may be sent, compacting the conversation first if it must."""
        fitted = self._view(request, request.messages)
        before = request_tokens(fitted)
        if before <= self.options.compact_at * self.window:
            return Fitted(fitted)
        if self.options.compaction == "off":
            self._check(before, "compaction is off")
            return Fitted(fitted)
        messages, ends = fold_view(self.events)
        shown = self._view(request, messages)
        fixed = request_tokens(replace(shown, messages=[]))
        summary_tokens = self._summary_tokens()
        target = int(KEEP_SHARE * self.options.compact_at * self.window)
        cut = choose_cut(shown.messages, ends, fixed + summary_tokens, target)
        if cut is None:
            self._check(before, "nothing before the current turn is left to compact")
            return Fitted(fitted)
        through, count = cut
        summary = _Summary(None)
        if self.options.compaction == "summarize":
            summary = await self._summarize(shown.messages[:count], summary_tokens)
        after_messages = [_note(summary.text), *shown.messages[count:]]
        after = request_tokens(replace(shown, messages=after_messages))
        await self.emit(_event(through, summary, before, after))
        # The fold now reads the event just recorded: the request is the fold's view.
        compacted = self._view(request, fold_view(self.events)[0])
        self._check(request_tokens(compacted), "even after compacting")
        if summary.usage is None:
            return Fitted(compacted)
        return Fitted(compacted, summary.usage, summary.cost_usd)

    def _check(self, tokens: int, why: str) -> None:
        if tokens > self.window:
            raise ContextExceeded(
                f"{CONTEXT_EXCEEDED}: the request needs about {tokens} tokens, more than the"
                f" context window of {self.window} ({why}); start a new session, or set"
                " define_agent(compaction=...) or a smaller max_tool_result_tokens"
            )

    def _summary_tokens(self) -> int:
        return min(SUMMARY_MAX_TOKENS, max(64, self.window // SUMMARY_SHARE))

    async def _summarize(self, dropped: Sequence[Message], max_tokens: int) -> _Summary:
        """One summary call; a failure is kept as the reason to fall back, never raised."""
        try:
            model = self.model
            declared = self.options.context_window
            if self.options.compaction_model is not None:
                model = self.resolve_model(self.options.compaction_model)
                declared = None if model.id != self.model.id else declared
            window = declared or model_window(model)
            room = int(self.options.compact_at * window) - max_tokens
            room -= estimate_tokens(len(SUMMARY_PROMPT)) + 16
            text = transcript(dropped, max(0, room) * 4)
            request = ModelRequest(
                system=SUMMARY_PROMPT,
                messages=[UserMessage(text)],
                max_tokens=max_tokens,
                context_window=declared,
            )
            out = await model_step(model, request, StepSink(), self.interrupted)
        except (LeaseLost, TurnInterrupted):
            raise
        except Exception as exc:  # any failure of the summary call falls back to `window`
            return _Summary(None, error=str(exc) or type(exc).__name__)
        cost = self.prices.cost(model.id, out.usage)
        if not out.text.strip():
            return _Summary(None, out.usage, cost, error="the summary came back empty")
        return _Summary(out.text.strip(), out.usage, cost)


def _note(summary: str | None) -> Message:
    return compacted_note({"summary": summary})


def _event(through: int, summary: _Summary, before: int, after: int) -> Payload:
    extra = {} if summary.error is None else {"summaryError": summary.error}
    return ContextCompacted(
        through_index=through,
        strategy="summarize" if summary.text is not None else "window",
        summary=summary.text,
        tokens_before=before,
        tokens_after=after,
        usage=summary.usage,
        cost_usd=summary.cost_usd,
        **extra,
    )


__all__ = [
    "CONTEXT_EXCEEDED",
    "SUMMARY_HEADING",
    "ContextExceeded",
    "ContextKeeper",
    "Fitted",
    "choose_cut",
    "shorten_results",
    "transcript",
]
