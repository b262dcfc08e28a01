"""Turns longer than one invocation: the deadline a host gives a turn, and the marker a
turn leaves when it stops early to carry on in a fresh invocation.

A host whose invocations end (Lambda) passes a `Deadline`; locally there is none and a turn
never continues. The turn checks it at step boundaries and before starting tool calls;
when what comes next cannot fit, it records nothing that ends the turn, leaves a
continuation marker in the store (outside the event stream, so a reader sees one turn),
releases its lease and dispatches itself again. The next invocation folds the events,
finds the marker matching where the turn stopped, consumes it and carries on.

The marker is what tells a deliberate stop from a process that died: without one, a
started turn whose process is gone is still ended as lost, and a tool call is never
started twice (a deferred call's marker is consumed before the call starts).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentkit.engine.folds.conversation import TurnState
from agentkit.events import StepCompleted
from agentkit.store.base import Store

DEFAULT_MARGIN = 120.0
DEFAULT_MAX_TURN_SECONDS = 3600.0
MARKER_STATE = "continue"
MARKER_TTL = 7 * 86400.0


@dataclass(frozen=True, slots=True)
class Deadline:
    """The time left to the invocation running a turn.

    `remaining()` is seconds until the invocation is killed; `margin` is the longest model
    step expected plus a safety margin: a step starts only with at least that much left.
    """

    remaining: Callable[[], float]
    margin: float = DEFAULT_MARGIN

    @classmethod
    def of_lambda(cls, context: Any, margin: float = DEFAULT_MARGIN) -> Deadline:
        """The deadline of a Lambda invocation, read from its context object."""

        def remaining() -> float:
            return float(context.get_remaining_time_in_millis()) / 1000.0

        return cls(remaining, margin)

    @classmethod
    def at(
        cls, end: float, margin: float = DEFAULT_MARGIN, clock: Callable[[], float] = time.monotonic
    ) -> Deadline:
        """A deadline at `end` on `clock` (tests inject a clock of their own)."""
        return cls(lambda: end - clock(), margin)

    def step_fits(self) -> bool:
        """True when a model step may start."""
        return self.remaining() >= self.margin

    def call_fits(self, timeout: float | None) -> bool:
        """True when a tool call that may take `timeout` seconds can finish in time.

        A tool without a declared timeout is expected to finish within the margin, which
        every step was started with."""
        return timeout is None or self.remaining() >= timeout


class ContinueTurn(Exception):
    """Raised inside the turn loop: stop here and carry on in a new invocation."""

    def __init__(self, marker: Continuation) -> None:
        super().__init__("continue in a new invocation")
        self.marker = marker


@dataclass(slots=True)
class Continuation:
    """Where a continued turn stopped: after `steps` steps, with `deferred` calls (requested
    but not started), `approvals` (calls of the same step still to be asked for) and the
    step's `done` event still to be recorded (None at a clean step boundary)."""

    steps: int
    deferred: list[str] = field(default_factory=list)
    approvals: list[str] = field(default_factory=list)
    done: StepCompleted | None = None

    def dumps(self) -> str:
        return json.dumps(
            {
                "steps": self.steps,
                "deferred": self.deferred,
                "approvals": self.approvals,
                "done": None if self.done is None else self.done.wire(),
            }
        )

    @classmethod
    def loads(cls, text: str) -> Continuation:
        raw = json.loads(text)
        done = raw.get("done")
        return cls(
            steps=int(raw["steps"]),
            deferred=[str(c) for c in raw.get("deferred") or []],
            approvals=[str(c) for c in raw.get("approvals") or []],
            done=None if done is None else StepCompleted.model_validate(done),
        )

    def matches(self, state: TurnState) -> bool:
        """True when the events are exactly where this marker says the turn stopped."""
        open_calls = set(self.deferred) | set(self.approvals)
        return (
            state.started
            and not state.terminal
            and state.steps == self.steps
            and state.step_open == (self.done is not None)
            and set(state.pending) == open_calls
            and not any(p.approval_requested or p.started for p in state.pending.values())
        )


def marker_key(session_id: str, turn_id: str) -> str:
    return f"turn-continue:{session_id}:{turn_id}"


async def leave_marker(store: Store, session_id: str, turn_id: str, marker: Continuation) -> None:
    """Record where the turn stopped (called while the turn's lease is still held)."""
    key = marker_key(session_id, turn_id)
    await store.settle_claim(key, MARKER_STATE, MARKER_TTL, detail=marker.dumps())


async def find_marker(store: Store, session_id: str, state: TurnState) -> Continuation | None:
    """The continuation marker of `state`'s turn, when it matches the events."""
    claim = await store.get_claim(marker_key(session_id, state.turn_id))
    if claim is None or claim.state != MARKER_STATE or claim.detail is None:
        return None
    try:
        marker = Continuation.loads(claim.detail)
    except (ValueError, KeyError, TypeError):
        return None
    return marker if marker.matches(state) else None


async def take_marker(store: Store, session_id: str, turn_id: str) -> None:
    """Consume the marker before anything runs: a crash from here on is a lost turn, so a
    deferred call is never started twice."""
    await store.release_claim(marker_key(session_id, turn_id))


def turn_limit_message(limit: float) -> str:
    return (
        f"the turn ran longer than max_turn_seconds ({limit:g} s); raise"
        " define_agent(max_turn_seconds=...) in agent/agent.py or split the task"
    )


__all__ = [
    "DEFAULT_MARGIN",
    "DEFAULT_MAX_TURN_SECONDS",
    "Continuation",
    "ContinueTurn",
    "Deadline",
    "find_marker",
    "leave_marker",
    "take_marker",
]
