"""The steps of a scripted eval: what the runner does, in order, to one fresh session.

    case = define_eval(
        steps=[
            say("Approve PR #1 please."),    # a message; waits until the turn settles
            approve(),                       # approve the next parked tool call
            say("Remind me in 2h.", cut_after=3),  # read the stream, drop it, resume it
            advance("2h"),                   # the manual clock: due reminders/schedules fire
            interrupt("Stop, use Oslo."),    # a follow-up sent while a turn is running
            call_tool("remind_me", delay="1d", prompt="Check again."),
        ],
        assertions=[...],
    )

A plain string in `steps` is `say(text)`. The first message starts the session; later ones
are follow-ups of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Advance",
    "CallTool",
    "Decide",
    "EvalStep",
    "Interrupt",
    "Say",
    "advance",
    "approve",
    "call_tool",
    "deny",
    "interrupt",
    "say",
]


@dataclass(frozen=True, slots=True)
class Say:
    """Send a message (start the session, or follow it up) and wait until the turn settles.

    `cut_after`: read the turn's stream as a client would, drop the connection after that
    many events and resume from the last index seen (the trajectory's `streamed`)."""

    text: str
    cut_after: int | None = None


@dataclass(frozen=True, slots=True)
class Interrupt:
    """Send a follow-up while a turn runs: once an event of type `after` is in the stream."""

    text: str
    after: str = "turn.started"


@dataclass(frozen=True, slots=True)
class Decide:
    """Approve or deny the next parked tool call (of `tool`, when given)."""

    decision: Literal["approve", "deny"]
    tool: str | None = None


@dataclass(frozen=True, slots=True)
class Advance:
    """Move the case's manual clock forward ("30m", "2h", "1d"); what comes due fires."""

    duration: str


@dataclass(frozen=True, slots=True)
class CallTool:
    """Run a server tool directly on the session (no model turn), as a host would."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


EvalStep = Say | Interrupt | Decide | Advance | CallTool


def say(text: str, *, cut_after: int | None = None) -> Say:
    """A message step; `cut_after=N` drops the stream after N events and resumes it."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("say() needs a non-empty message")
    if cut_after is not None and cut_after < 1:
        raise ValueError("cut_after must be at least 1")
    return Say(text, cut_after)


def interrupt(text: str, *, after: str = "turn.started") -> Interrupt:
    """A follow-up sent while the current turn runs (once an `after` event has appeared)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("interrupt() needs a non-empty message")
    return Interrupt(text, after)


def approve(tool: str | None = None) -> Decide:
    """Approve the next parked tool call (of `tool`, when given)."""
    return Decide("approve", tool)


def deny(tool: str | None = None) -> Decide:
    """Deny the next parked tool call (of `tool`, when given)."""
    return Decide("deny", tool)


def advance(duration: str) -> Advance:
    """Move the manual clock forward by `duration` ("30s", "20m", "2h", "1d", "1h30m")."""
    if not isinstance(duration, str) or not duration.strip():
        raise ValueError("advance() needs a duration such as '2h'")
    return Advance(duration.strip())


def call_tool(name: str, /, **arguments: Any) -> CallTool:
    """Run tool `name` with `arguments` directly on the eval's session."""
    if not name:
        raise ValueError("call_tool() needs a tool name")
    return CallTool(name, dict(arguments))


def as_step(value: object) -> EvalStep:
    """A step, or a string as `say(string)`; `TypeError` for anything else."""
    if isinstance(value, str):
        return say(value)
    if isinstance(value, Say | Interrupt | Decide | Advance | CallTool):
        return value
    raise TypeError(f"not an eval step: {value!r} (use say, approve, advance, ...)")
