"""`define_agent` and `define_instructions`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentkit.authoring.context_options import parse_context_options
from agentkit.authoring.loop_options import parse_loop_options
from agentkit.costs import parse_budget, parse_prices


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    """Runtime config of an agent (root `agent/agent.py`, or a subagent's `agent.py`).

    `model` is a `provider:model` id (None inherits: the root falls back to the host default,
    a subagent to its parent). `description` is required on subagents; a subagent may also
    carry its `instructions` inline.
    """

    model: str | None = None
    max_steps: int = 20
    description: str | None = None
    instructions: str | None = None
    tool_timeout: float = 120.0
    stop_grace: float = 2.0
    options: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None  # display name; overrides pyproject's [project].name


def define_agent(
    *,
    model: str | None = None,
    max_steps: int = 20,
    description: str | None = None,
    instructions: str | None = None,
    tool_timeout: float = 120.0,
    stop_grace: float = 2.0,
    name: str | None = None,
    **options: Any,
) -> AgentDefinition:
    """Define an agent's runtime config.

    `stop_grace` is how many seconds running tools get to finish after a stop (or a
    follow-up) interrupts their turn; then they are cancelled (`ctx.cancelled` is set at
    the start of the grace period, so a tool can stop cleanly).

    `name` (root agent only) is the display name; without it the name comes from
    pyproject.toml `[project].name`, then the project folder's name. `on_busy`
    (`interrupt` by default, `queue` or `reject`) is what a message to a busy session does
    unless the request or its channel says otherwise.

    `prices={model id: {"input", "output", "cacheRead", "cacheWrite"}}` (dollars per
    million tokens) overrides the shipped price table; `budget={"turn_tokens",
    "turn_usd", "session_tokens", "session_usd"}` sets spending limits (see docs/costs.md).
    `max_turn_seconds` (one hour by default) bounds a turn's wall time, across however many
    invocations it spans on a host whose invocations end (see docs/deploy.md).

    `context_window` (tokens) overrides the window the model's provider table gives;
    `compaction` (`summarize` by default, `window` or `off`), `compact_at` (0.8 of the
    window), `max_tool_result_tokens` and `compaction_model` say how a conversation that
    outgrows it is compacted (see docs/engine.md).

    The loop breaker is on by default: a turn that calls the same tool with the same
    arguments `loop_repeat` times (5), or runs `loop_idle_steps` steps (8) with no new tool
    result and no text, is stopped as `loop_guard` says (`fail` by default: the turn fails
    with `loop_detected`; `ask` parks it on a "continue?" question; `off`).
    """
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    busy = options.get("on_busy")
    if busy is not None and busy not in ("interrupt", "queue", "reject"):
        raise ValueError(f"on_busy must be interrupt, queue or reject, not {busy!r}")
    parse_prices(options.get("prices"))  # raise at definition time, naming the bad entry
    parse_budget(options.get("budget"))
    parse_context_options(options)
    parse_loop_options(options)
    limit = options.get("max_turn_seconds")
    if limit is not None and (
        isinstance(limit, bool) or not isinstance(limit, int | float) or not limit > 0
    ):
        raise ValueError(f"max_turn_seconds must be a positive number of seconds, not {limit!r}")
    if not stop_grace >= 0:
        raise ValueError("stop_grace must be zero or more seconds")
    return AgentDefinition(
        model=model,
        max_steps=max_steps,
        description=description,
        instructions=instructions,
        tool_timeout=tool_timeout,
        stop_grace=float(stop_grace),
        options=dict(options),
        name=name,
    )


@dataclass(frozen=True, slots=True)
class InstructionsDefinition:
    """Generated instructions (`agent/instructions.py`)."""

    markdown: str


def define_instructions(markdown: str) -> InstructionsDefinition:
    """Define the always-on system prompt from Python (for generated prompts)."""
    if not isinstance(markdown, str):
        raise TypeError("define_instructions needs markdown text")
    return InstructionsDefinition(markdown=markdown)
