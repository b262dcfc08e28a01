"""The loop breaker: notices a turn going round in circles and says so, with evidence.

A turn trips it when it asks for the same tool with the same arguments `loop_repeat`
times, or when `loop_idle_steps` steps in a row brought no new tool result and no text.
It is checked when a step asks for tool calls, before any of them runs (a step with no
calls ends the turn anyway), so the call that trips it never runs. What is counted is
folded from the turn's own events, so a turn continued in a new invocation, or resumed
after an approval, counts on from where it was; a "continue?" question answered yes
(`loop_guard="ask"`) starts the count afresh.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentkit.authoring.loop_options import LoopOptions
from agentkit.engine.folds.conversation import LOOP_TOOL, turn_events
from agentkit.engine.turn.deps import Planned, RunningTurn, error_result
from agentkit.errors import RunError
from agentkit.events import (
    ActionApprovalRequested,
    ActionApprovalResolved,
    ActionResult,
    ActionsRequested,
    Event,
    MessageCompleted,
    Payload,
    StepCompleted,
)

LOOP_CALL_PREFIX = "loop_"
LOOP_DETECTED = "loop_detected"  # the error of a turn the loop breaker ended

_WATCHED: tuple[type[Payload], ...] = (
    ActionsRequested,
    ActionResult,
    MessageCompleted,
    StepCompleted,
    ActionApprovalResolved,
)


def is_loop_question(tool_name: str, call_id: str) -> bool:
    """Whether a parked call is the loop breaker's "continue?" (not a user tool's call)."""
    return tool_name == LOOP_TOOL and call_id.startswith(LOOP_CALL_PREFIX)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True, slots=True)
class LoopEvidence:
    """Why the loop breaker stopped a turn, as recorded in `turn.failed` or the question."""

    reason: str  # "repeated_call" or "idle_steps"
    count: int  # repeats of the call, or steps in a row with nothing new
    tool_name: str | None = None
    arguments: dict[str, Any] | None = None

    def data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reason": self.reason, "count": self.count}
        if self.tool_name is not None:
            out["toolName"] = self.tool_name
            out["arguments"] = self.arguments or {}
        return out

    def message(self) -> str:
        if self.reason == "repeated_call":
            return (
                f"loop detected: {self.tool_name} was called {self.count} times with the"
                " same arguments"
            )
        return f"loop detected: {self.count} steps in a row with no new tool result and no text"


class LoopGuard:
    """Counts one turn's calls and steps; `tripped` says when the turn is looping."""

    def __init__(self, options: LoopOptions, events: Iterable[Event], turn_id: str) -> None:
        self.options = options
        self.tripped: LoopEvidence | None = None
        self._reset()
        if options.mode == "off":
            return
        by_type = {cls.type.value: cls for cls in _WATCHED}
        for ev in turn_events(events, turn_id):  # from the turn's start, not the session's
            cls = by_type.get(ev.type)
            if cls is not None and ev.turn_id == turn_id:
                self.observe(ev.as_(cls))
        self.tripped = None  # what tripped before was answered (stopped or continued)

    def _reset(self) -> None:
        self.calls: dict[str, int] = {}  # calls asked for, by tool and arguments
        self.results: set[str] = set()  # every distinct result this turn has seen
        self.idle = 0  # steps in a row with nothing new
        self.fresh = False  # whether the step under way brought something new
        self.tripped = None

    def observe(self, p: Payload) -> None:
        """Take in one recorded payload of the turn."""
        if self.options.mode == "off":
            return
        if isinstance(p, ActionsRequested):
            for a in p.actions:
                key = _key([a.tool_name, a.arguments])
                seen = self.calls[key] = self.calls.get(key, 0) + 1
                if seen >= self.options.repeat and self.tripped is None:
                    self.tripped = LoopEvidence(
                        "repeated_call", seen, a.tool_name, dict(a.arguments)
                    )
            if self.tripped is None and self.idle >= self.options.idle_steps:
                self.tripped = LoopEvidence("idle_steps", self.idle)
        elif isinstance(p, ActionResult):
            key = _key([p.tool_name, p.result, p.error])
            if key not in self.results:
                self.results.add(key)
                self.fresh = True
        elif isinstance(p, MessageCompleted):
            if p.text.strip():
                self.fresh = True
        elif isinstance(p, StepCompleted):
            self.idle = 0 if self.fresh else self.idle + 1
            self.fresh = False
        elif (
            isinstance(p, ActionApprovalResolved)
            and p.call_id.startswith(LOOP_CALL_PREFIX)
            and p.decision == "approve"
        ):
            self._reset()


class LoopDetected(RunError):
    """The turn is looping and ends failed with `loop_detected`; `evidence` says why."""

    def __init__(self, evidence: dict[str, Any]) -> None:
        super().__init__(LOOP_DETECTED)
        self.evidence = evidence


async def stop_looping(
    runner: RunningTurn, evidence: LoopEvidence, plans: list[Planned], done: StepCompleted
) -> None:
    """Stop a turn that tripped the guard, before the step's calls run.

    `fail` ends the turn (its unanswered calls closed with the error); `ask` answers the
    step's calls as not run and parks the turn on a "continue?" question, as the budget
    does: approving lets the model go on (counting afresh), denying fails the turn."""
    if runner.d.manifest.agent.options.get("loop_guard") != "ask":
        raise LoopDetected(evidence.data())
    why = f"{evidence.message()}; not run while a person decides whether to continue"
    question = ActionApprovalRequested(
        call_id=LOOP_CALL_PREFIX + secrets.token_hex(6),
        tool_name=LOOP_TOOL,
        arguments={"message": f"{evidence.message()}; continue?", **evidence.data()},
    )
    await runner.emit(*(error_result(p.call, why) for p in plans), done, question)


__all__ = [
    "LOOP_CALL_PREFIX",
    "LOOP_DETECTED",
    "LOOP_TOOL",
    "LoopDetected",
    "LoopEvidence",
    "LoopGuard",
    "is_loop_question",
    "stop_looping",
]
