"""Running one turn of a session: the turn lease, interrupts, composing the model loop.

`AgentRuntime.run_turn` lands here. The lease makes a turn dispatched twice run once; a
turn whose process died (started, not resumable) is ended as lost instead of re-run.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agentkit.authoring.contexts import HostServices
from agentkit.engine.agent_parts import AgentParts
from agentkit.engine.arms import Arms
from agentkit.engine.folds.conversation import TurnState, fold_turn
from agentkit.engine.on_busy import drain_queue
from agentkit.engine.pausing import turn_held
from agentkit.engine.ports import SessionPorts
from agentkit.engine.turn.deadline import (
    Continuation,
    Deadline,
    find_marker,
    leave_marker,
    take_marker,
)
from agentkit.engine.turn.ending import LOST_TURN, fail_turn
from agentkit.engine.turn.lease import LeaseKeeper
from agentkit.errors import LeaseLost, ModelError
from agentkit.events import Event
from agentkit.models.base import Model
from agentkit.sessions import SessionRecord

if TYPE_CHECKING:
    from agentkit.engine.tools.calls import ToolProvider

log = logging.getLogger("agentkit.engine.running")
STORE_INTERRUPT_POLL = 0.25


class TurnHost(Protocol):
    """What a turn takes from the runtime that runs it, read when the turn starts."""

    @property
    def parts(self) -> AgentParts: ...

    @property
    def model_resolver(self) -> Callable[[str | None], Model]: ...

    @property
    def tool_providers(self) -> list[ToolProvider]: ...

    @property
    def host(self) -> HostServices: ...

    @property
    def state_root(self) -> Path: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    def workspace(self, session_id: str) -> Path: ...

    def prepare_workspace(self, session_id: str, files: dict[str, str]) -> None: ...


async def run_turn(
    ports: SessionPorts,
    host: TurnHost,
    session_id: str,
    turn_id: str,
    deadline: Deadline | None = None,
) -> None:
    """Run or resume one turn under the session's lease; nothing when another holds it.

    With a `deadline` (a host whose invocations end) the turn may stop at a step boundary
    and dispatch itself again (see `engine.turn.deadline`); the lease is released first, so the
    next invocation can take it."""
    record = await ports.session_record(session_id)
    if record is None:
        return
    holder = f"{turn_id}:{secrets.token_hex(6)}"
    if not await ports.store.acquire_lease(session_id, holder, ports.lease_ttl):
        return
    # Once the lease is lost, someone else owns the turn: it stops at its next safe point.
    turns = ports.turns
    renewer = LeaseKeeper(
        ports.store, session_id, holder, ports.lease_ttl, on_lost=lambda: turns.stop(session_id)
    )
    continued: Continuation | None = None
    turns.track(session_id, turn_id)
    try:
        events = await ports.store.read(session_id)
        state = fold_turn(events, turn_id)
        if not await _to_run(ports, record, turn_id, holder, state, events):
            return
        resume = None
        if state.started and not state.resumable:
            resume = await find_marker(ports.store, session_id, state)
            if resume is None:
                settled = await ports.settle_in_doubt(record, state)
                await fail_turn(ports.recorder(record, turn_id, holder), state, LOST_TURN, settled)
                return
            await take_marker(ports.store, session_id, turn_id)
            if await ports.store.interrupt_requested(session_id, turn_id):
                # A stop asked for between invocations is seen before anything starts.
                turns.stop(session_id)
        continued = await _drive(
            ports, host, record, turn_id, state, events, holder, deadline, resume
        )
        if continued is not None:
            # The marker is left only while the lease is still this worker's.
            if not await ports.store.renew_lease(session_id, holder, ports.lease_ttl):
                raise LeaseLost(f"lease of {session_id} lost before continuing")
            await leave_marker(ports.store, session_id, turn_id, continued)
    except LeaseLost:
        continued = None
        log.warning("turn %s lost its lease to another worker; it stops here", turn_id)
    finally:
        await renewer.stop()
        # The stored flag stays until the next message is accepted (`AgentRuntime._accept`).
        turns.untrack(session_id, turn_id)
        await ports.store.release_lease(session_id, holder)
    if continued is not None:
        # A failure here propagates: the host retries this invocation, which continues.
        await ports.dispatcher.dispatch(session_id, turn_id)
        return
    # Messages queued behind this turn (`on_busy="queue"`) start now, oldest first.
    try:
        await drain_queue(ports, session_id)
    except Exception:  # the turn is over either way; recovery or the next message retries
        log.exception("could not start the queued message of session %s", session_id)


async def _to_run(
    ports: SessionPorts,
    record: SessionRecord,
    turn_id: str,
    holder: str,
    state: TurnState,
    events: list[Event],
) -> bool:
    """Whether the turn has anything to run. One whose session was paused or killed, or
    whose agent was switched off, since it was dispatched (or between two invocations of
    it) is ended here, before another model call."""
    if state.terminal or not state.received or state.parked:
        return False
    held = await turn_held(ports, events)
    if held is None:
        return True
    await fail_turn(ports.recorder(record, turn_id, holder), state, held)
    return False


async def _drive(
    ports: SessionPorts,
    host: TurnHost,
    record: SessionRecord,
    turn_id: str,
    state: TurnState,
    events: list[Event],
    holder: str,
    deadline: Deadline | None = None,
    resume: Continuation | None = None,
) -> Continuation | None:
    """Run the model loop; returns where the turn stopped when it is to continue."""
    recorder = ports.recorder(record, turn_id, holder)
    parts = host.parts  # this turn's, even if the bundle is reloaded while it runs
    arms = Arms.of(events, parts.experiments)
    try:
        model = parts.resolve(arms.model) if arms.model else parts.model()
    except ModelError as exc:
        await fail_turn(recorder, state, str(exc))
        return None
    # Loaded on the first turn only: a process that just accepts requests never needs it.
    from agentkit.engine.telemetry import agent_span
    from agentkit.engine.turn.deps import TurnDeps
    from agentkit.engine.turn.loop import TurnRunner

    tools = await parts.turn_tools(host.tool_providers)
    if arms.allow is not None or arms.deny:
        tools = {n: e for n, e in tools.items() if arms.keep_tool(n)}
    deps = TurnDeps(
        manifest=parts.manifest,
        session=record,
        recorder=recorder,
        model=model,
        resolve_model=parts.resolve,
        tools=tools,
        system=arms.system(parts.system_prompt()),
        max_steps=arms.max_steps,
        abs=arms.abs,
        host=host.host,
        workspace=host.workspace(record.id),
        state_root=host.state_root,
        project_root=parts.bundle.root,
        interrupted=_interrupt_check(ports, record.id, turn_id),
        events=events,
        turns=ports.turns,
        prepare_workspace=lambda: host.prepare_workspace(record.id, {}),
        stop_grace=parts.manifest.agent.stop_grace,
        deadline=deadline,
        resume=resume,
        clock=host.clock,
        switch=ports.switch,
    )
    with agent_span(
        parts.manifest.agent.name,
        conversation_id=record.id,
        turn_id=turn_id,
        principal=record.principal,
        model_id=model.id,
    ) as span:
        runner = TurnRunner(deps, state, span)
        await runner.run()
        span.finish(runner.usage, runner.cost, continued=runner.continued is not None)
    return runner.continued


def _interrupt_check(
    ports: SessionPorts, session_id: str, turn_id: str
) -> Callable[[], Awaitable[bool]]:
    """Local stops are seen at once; the store's flag (set by other processes) is read
    at most every `STORE_INTERRUPT_POLL` seconds, starting that long into the turn."""
    last = time.monotonic()
    turns = ports.turns

    async def check() -> bool:
        nonlocal last
        if turns.is_stopped(session_id, turn_id):
            return True
        now = time.monotonic()
        if now - last < STORE_INTERRUPT_POLL:
            return False
        last = now
        switch = ports.switch
        if switch is not None and (await switch.read()).on:
            return True  # the agent's kill switch stops every turn
        return await ports.store.interrupt_requested(session_id, turn_id)

    return check
