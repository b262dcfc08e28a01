"""The agent's context options: its window and how a long conversation is compacted.

`define_agent(context_window=N, compaction="summarize", compact_at=0.8,
max_tool_result_tokens=N, compaction_model="provider:model")` sets them; each is checked
when the agent is defined, so a mistake names itself at build time rather than mid-turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Strategy = Literal["summarize", "window", "off"]
STRATEGIES: tuple[Strategy, ...] = ("summarize", "window", "off")
DEFAULT_COMPACT_AT = 0.8
TOOL_RESULT_SHARE = 4  # by default one tool result may fill a quarter of the window


@dataclass(frozen=True, slots=True)
class ContextOptions:
    """What the agent said about its context (None: not said, the defaults apply)."""

    context_window: int | None = None
    compaction: Strategy = "summarize"
    compact_at: float = DEFAULT_COMPACT_AT
    max_tool_result_tokens: int | None = None
    compaction_model: str | None = None

    def tool_result_limit(self, window: int) -> int:
        """The most tokens one tool result may take in the model's view."""
        if self.max_tool_result_tokens is not None:
            return self.max_tool_result_tokens
        return max(1, window // TOOL_RESULT_SHARE)


def _positive_int(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive whole number of tokens, not {value!r}")
    return value


def parse_context_options(options: Mapping[str, Any]) -> ContextOptions:
    """The context options among an agent's `options`; `ValueError` names a bad one."""
    window = _positive_int("context_window", options.get("context_window"))
    strategy = options.get("compaction", "summarize")
    if strategy not in STRATEGIES:
        raise ValueError(f"compaction must be summarize, window or off, not {strategy!r}")
    compact_at = options.get("compact_at", DEFAULT_COMPACT_AT)
    if (
        isinstance(compact_at, bool)
        or not isinstance(compact_at, int | float)
        or not 0 < compact_at <= 1
    ):
        raise ValueError(
            f"compact_at must be a share of the window above 0 and at most 1, not {compact_at!r}"
        )
    limit = _positive_int("max_tool_result_tokens", options.get("max_tool_result_tokens"))
    model = options.get("compaction_model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ValueError(f"compaction_model must be a model id such as 'test', not {model!r}")
    return ContextOptions(
        context_window=window,
        compaction=strategy,
        compact_at=float(compact_at),
        max_tool_result_tokens=limit,
        compaction_model=model.strip() if isinstance(model, str) else None,
    )


__all__ = ["STRATEGIES", "ContextOptions", "Strategy", "parse_context_options"]
