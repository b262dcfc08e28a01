"""What one turn is made of: its dependencies (`TurnDeps`), the calls it plans, the
results it records, and `RunningTurn`, the part of the runner its helpers (continuing in
a new invocation, resuming decided approvals) work on."""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from agentkit.authoring.contexts import HostServices
from agentkit.engine.fleet_switch import PauseSwitch
from agentkit.engine.folds.conversation import TurnState, turn_events
from agentkit.engine.local_turns import LocalTurns
from agentkit.engine.tools.calls import InvalidToolInput, Outcome, ToolEntry
from agentkit.engine.turn.budget import Spend
from agentkit.engine.turn.deadline import Continuation, Deadline
from agentkit.engine.turn.recorder import Recorder
from agentkit.engine.turn.step import StepOutput
from agentkit.events import (
    ActionCall,
    ActionResult,
    Event,
    EventType,
    Payload,
    StepCompleted,
    Usage,
)
from agentkit.models.base import Model
from agentkit.project.manifest import Manifest
from agentkit.sessions import SessionRecord


@dataclass(slots=True)
class TurnDeps:
    """Everything one turn needs, composed by the runtime."""

    manifest: Manifest
    session: SessionRecord
    recorder: Recorder
    model: Model
    resolve_model: Callable[[str | None], Model]
    tools: dict[str, ToolEntry]
    system: str
    host: HostServices
    workspace: Path
    state_root: Path
    project_root: Path | None
    interrupted: Callable[[], Awaitable[bool]]
    events: list[Event] = field(default_factory=list)
    turns: LocalTurns = field(default_factory=LocalTurns)
    """This process's turns: the step streaming is registered there, so a stop cancels it."""
    prepare_workspace: Callable[[], None] = lambda: None
    """Seeds the session workspace; called before the first agent-execution tool runs."""
    max_steps: int | None = None  # an A/B variant's override of the agent's max_steps
    abs: dict[str, str] = field(default_factory=dict)  # the session's A/B arms
    stop_grace: float = 2.0
    """Seconds running tools get after an interrupt before they are cancelled."""
    deadline: Deadline | None = None
    """The end of this invocation (None locally: the turn never continues elsewhere)."""
    resume: Continuation | None = None  # where an earlier invocation stopped this turn
    clock: Callable[[], float] = time.time  # wall clock, for `max_turn_seconds`
    switch: PauseSwitch | None = None  # the agent's kill switch (`engine.fleet_switch`)


@dataclass(slots=True)
class Planned:
    """A call the model asked for, checked against the tool table."""

    call: ActionCall
    entry: ToolEntry | None = None
    value: Any = None
    error: str | None = None
    needs_approval: bool = False


@dataclass(frozen=True, slots=True)
class RequestedCall:
    """A call to plan again (a resumed one), shaped like the model's own."""

    id: str
    name: str
    arguments: dict[str, Any]


def plan_call(tools: Mapping[str, ToolEntry], call: Any) -> Planned:
    """What to do with one call the model asked for (a `ToolCall` or a `RequestedCall`):
    its tool and validated input, whether it needs approval, or why it cannot run."""
    entry = tools.get(call.name)
    if entry is None:
        names = ", ".join(sorted(tools)) or "none"
        return Planned(
            ActionCall(call_id=call.id, tool_name=call.name, arguments=call.arguments),
            error=f"unknown tool {call.name!r}; available tools: {names}",
        )
    try:
        args, value = entry.validate(call.arguments)
    except InvalidToolInput as exc:
        return Planned(
            ActionCall(call_id=call.id, tool_name=call.name, arguments=call.arguments),
            entry,
            error=str(exc),
        )
    return Planned(
        ActionCall(call_id=call.id, tool_name=call.name, arguments=args),
        entry,
        value,
        needs_approval=entry.needs_approval(value),
    )


def turn_began(events: list[Event], turn_id: str) -> float | None:
    """Where the turn's running time is counted from (epoch seconds): its `turn.started`,
    or its latest approval decision, so time parked waiting for a person does not count."""
    began: float | None = None
    for ev in turn_events(events, turn_id):
        if ev.turn_id == turn_id and ev.type in _RUN_CLOCK_STARTS:
            try:
                began = datetime.fromisoformat(ev.at).timestamp()
            except ValueError:
                continue
    return began


_RUN_CLOCK_STARTS = (EventType.TURN_STARTED, EventType.ACTION_APPROVAL_RESOLVED)


def error_result(call: ActionCall, message: str) -> ActionResult:
    return ActionResult(
        call_id=call.call_id, tool_name=call.tool_name, is_error=True, error=message
    )


def tool_result(call: ActionCall, outcome: Outcome) -> ActionResult:
    return ActionResult(
        call_id=call.call_id,
        tool_name=call.tool_name,
        is_error=outcome.is_error,
        result=outcome.result,
        error=outcome.error,
        duration_ms=outcome.duration_ms,
    )


class RunningTurn(Protocol):
    """What `TurnRunner` offers the helpers that resume or continue it."""

    d: TurnDeps
    state: TurnState
    open: dict[str, ActionCall]
    usage: Usage
    cost: float | None
    last_step: Spend
    progressed: bool
    continued: Continuation | None
    cancel_signal: threading.Event

    def plan(self, call: Any) -> Planned: ...

    async def run_calls(self, plans: list[Planned], *, decided: bool = False) -> None: ...

    async def end_step(
        self, parked: list[Planned], done: StepCompleted, out: StepOutput
    ) -> StepOutput | None: ...

    async def emit(self, *payloads: Payload) -> None: ...

    async def fail(self, error: str, evidence: dict[str, Any] | None = None) -> None: ...
