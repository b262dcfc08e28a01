"""The loop breaker's options: what counts as a turn going round in circles, and what then.

`define_agent(loop_guard="fail", loop_repeat=5, loop_idle_steps=8)` sets them; each is
checked when the agent is defined, so a mistake names itself at build time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

LoopGuardMode = Literal["ask", "fail", "off"]
LOOP_GUARD_MODES: tuple[LoopGuardMode, ...] = ("ask", "fail", "off")
DEFAULT_LOOP_GUARD: LoopGuardMode = "fail"
DEFAULT_LOOP_REPEAT = 5
DEFAULT_LOOP_IDLE_STEPS = 8


@dataclass(frozen=True, slots=True)
class LoopOptions:
    """How the loop breaker watches a turn (the defaults: on, failing the turn)."""

    mode: LoopGuardMode = DEFAULT_LOOP_GUARD
    repeat: int = DEFAULT_LOOP_REPEAT  # the same call this many times stops the turn
    idle_steps: int = DEFAULT_LOOP_IDLE_STEPS  # this many steps with nothing new stop it


def _count(name: str, value: Any, default: int, least: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number of at least {least}, not {value!r}")
    return value


def parse_loop_options(options: Mapping[str, Any]) -> LoopOptions:
    """The loop breaker's options among an agent's `options`; `ValueError` names a bad one."""
    mode = options.get("loop_guard", DEFAULT_LOOP_GUARD)
    if mode not in LOOP_GUARD_MODES:
        raise ValueError(f"loop_guard must be ask, fail or off, not {mode!r}")
    repeat = _count("loop_repeat", options.get("loop_repeat"), DEFAULT_LOOP_REPEAT, 2)
    idle = _count("loop_idle_steps", options.get("loop_idle_steps"), DEFAULT_LOOP_IDLE_STEPS, 1)
    return LoopOptions(mode, repeat, idle)
