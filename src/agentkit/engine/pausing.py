"""Pausing, resuming and killing one session, and refusing work while paused.

A pause is recorded as `session.paused` and, like a stop, interrupts the running turn: its
model stream is cancelled, running tools get `stop_grace`, and the turn ends at its next
step boundary. The pause is in the session's events and in the store's interrupt flag, so a
turn running in another process, or continued in a later invocation, sees it there. Until
`session.resumed`, follow-ups and approvals get `409 session_paused`, and no turn starts.

A kill is a pause for good: `session.killed`, the running turn ended, then `session.failed`
with reason `killed`, the stream's last event. Nothing resumes it (`409 session_killed`).

The agent-wide kill switch (`engine.fleet_switch`) refuses new sessions and follow-ups with
`503 agent_paused` and stops every turn at its next step boundary.

Each operation is idempotent: a second pause records nothing. Concurrent ones agree through
a store claim per transition, so exactly one of them records it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence

from agentkit.engine.fleet_switch import RETRY_AFTER, PauseSwitch
from agentkit.engine.folds.conversation import open_turns
from agentkit.engine.ports import SessionPorts
from agentkit.engine.service import PauseOutcome, PauseStatus
from agentkit.engine.settling import abandon_parked
from agentkit.engine.turn.ending import KILLED, KILLED_ERROR, session_failed
from agentkit.errors import Conflict, HttpError
from agentkit.events import (
    Event,
    EventType,
    SessionKilled,
    SessionPaused,
    SessionResumed,
    draft,
)
from agentkit.events.carried import Carried
from agentkit.sessions import Principal, SessionRecord, SessionStatus, fold_status_recent

SESSION_PAUSED = "session paused"
SESSION_KILLED = KILLED_ERROR
AGENT_PAUSED = "agent paused"
# How often a kill looks whether the interrupted turn has ended.
KILL_POLL = 0.05
CLAIM_TTL = 86_400.0


class AgentPaused(HttpError):
    """The agent's kill switch is on: nothing new starts until it is lifted."""

    status = 503
    code = "agent_paused"

    def __init__(self, message: str = "the agent is paused by its operator") -> None:
        super().__init__(message, retryAfter=RETRY_AFTER)
        self.headers = {"retry-after": str(RETRY_AFTER)}


class _Pauses:
    """The session's pause status folded from its events, and how many transitions."""

    __slots__ = ("ended", "status", "transitions")

    def __init__(self) -> None:
        self.status: PauseStatus = "running"
        self.transitions = 0
        self.ended = False  # the kill's `session.failed` is recorded

    def copy(self) -> _Pauses:
        other = _Pauses()
        other.status, other.transitions, other.ended = self.status, self.transitions, self.ended
        return other

    def add(self, ev: Event) -> None:
        t = ev.type
        if t == EventType.SESSION_PAUSED and self.status == "running":
            self.status, self.transitions = "paused", self.transitions + 1
        elif t == EventType.SESSION_RESUMED and self.status == "paused":
            self.status, self.transitions = "running", self.transitions + 1
        elif t == EventType.SESSION_KILLED:
            self.status, self.transitions = "killed", self.transitions + 1
        elif t == EventType.SESSION_FAILED and ev.data.get("reason") == KILLED:
            self.ended = True


_PAUSES: Carried[_Pauses] = Carried(_Pauses)


def pause_status(events: Iterable[Event]) -> PauseStatus:
    """`running`, `paused` or `killed`, folded from the session's events."""
    return _PAUSES.over(events).status


def stop_error(events: Iterable[Event], default: str) -> str:
    """What a turn interrupted by a pause or kill says it ended with (else `default`)."""
    status = pause_status(events)
    if status == "killed":
        return SESSION_KILLED
    if status == "paused":
        return SESSION_PAUSED
    return default


def refuse_paused(events: Sequence[Event]) -> None:
    """`409 session_paused` / `session_killed` for a message or decision to such a session."""
    status = pause_status(events)
    if status == "killed":
        raise Conflict("the session was killed; it takes no more turns", code="session_killed")
    if status == "paused":
        raise Conflict(
            "the session is paused; resume it first (POST .../resume)", code="session_paused"
        )


async def refuse_switched(switch: PauseSwitch | None) -> None:
    """`503 agent_paused` (with `Retry-After`) while the agent's kill switch is on."""
    if switch is not None and (await switch.read()).on:
        raise AgentPaused()


async def refuse_message(ports: SessionPorts, session_id: str) -> list[Event]:
    """Everything that refuses a message to an existing session: the switch, then a pause.

    Returns the session's events it read, for the rest of the request (`settle(events=...)`)
    to go on from, so accepting a follow-up reads the log once."""
    await refuse_switched(ports.switch)
    events = await ports.store.read(session_id)
    refuse_paused(events)
    return events


async def turn_held(ports: SessionPorts, events: Sequence[Event]) -> str | None:
    """Why a turn must not take a step now (its error), or None: a paused or killed
    session, or the switch on."""
    error = stop_error(events, "")
    if error:
        return error
    if ports.switch is not None and (await ports.switch.read()).on:
        return AGENT_PAUSED
    return None


async def pause(ports: SessionPorts, record: SessionRecord, principal: Principal) -> PauseOutcome:
    """Pause the session and interrupt what runs in it; a parked turn stays parked."""
    events = await ports.store.read(record.id)
    state = _PAUSES.over(events)
    if state.status == "killed":
        return PauseOutcome("killed", False)
    changed = False
    if state.status == "running" and await _claim(ports, record.id, state.transitions):
        await ports.record(record, [draft(SessionPaused(by=principal.id))])
        changed = True
    await _interrupt(ports, record.id)  # again on a retry: a crash may have come between
    return PauseOutcome("paused", changed)


async def resume(ports: SessionPorts, record: SessionRecord, principal: Principal) -> PauseOutcome:
    """Let the session take messages and decisions again (`409 session_killed` if killed)."""
    events = await ports.store.read(record.id)
    state = _PAUSES.over(events)
    if state.status == "killed":
        raise Conflict("the session was killed; it cannot be resumed", code="session_killed")
    if state.status == "running":
        return PauseOutcome("running", False)
    if not await _claim(ports, record.id, state.transitions):
        return PauseOutcome("running", False)  # a concurrent resume recorded it
    await ports.store.set_interrupt(record.id, False)
    ports.turns.forget_stop(record.id)
    await ports.record(record, [draft(SessionResumed(by=principal.id))])
    return PauseOutcome("running", True)


async def kill(
    ports: SessionPorts, record: SessionRecord, principal: Principal, settle_timeout: float
) -> PauseOutcome:
    """End the session for good: interrupt it, wait (bounded) for its turn to end, then
    record `session.failed` with reason `killed`."""
    events = await ports.store.read(record.id)
    state = _PAUSES.over(events)
    changed = False
    if state.status != "killed" and await _claim(ports, record.id, state.transitions):
        await ports.record(record, [draft(SessionKilled(by=principal.id))])
        changed = True
    await _interrupt(ports, record.id)
    events = await ports.store.read(record.id)
    if fold_status_recent(events) == SessionStatus.AWAITING_APPROVAL:
        for turn_id in await abandon_parked(ports, record, events):
            await ports.interrupt(record.id, turn_id)
    await _wait_idle(ports, record.id, settle_timeout)
    events = await ports.store.read(record.id)
    if not _PAUSES.over(events).ended and await ports.store.claim(f"killed:{record.id}", CLAIM_TTL):
        await ports.record(record, [draft(session_failed(SESSION_KILLED))])
        changed = True
    return PauseOutcome("killed", changed)


async def _claim(ports: SessionPorts, session_id: str, transitions: int) -> bool:
    """One caller per transition records it (the next transition has its own key)."""
    return await ports.store.claim(f"pausing:{session_id}:{transitions}", CLAIM_TTL)


async def _interrupt(ports: SessionPorts, session_id: str) -> None:
    """Stop any turn of the session: here at once, elsewhere through the store's flag (also
    what a turn continued in a later invocation reads before it starts)."""
    ports.turns.stop(session_id)
    await ports.store.set_interrupt(session_id, True)


async def _wait_idle(ports: SessionPorts, session_id: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        events = await ports.store.read(session_id)
        running = fold_status_recent(events) == SessionStatus.RUNNING and bool(open_turns(events))
        if not running and await ports.store.get_lease(session_id) is None:
            return
        if time.monotonic() >= deadline:
            return  # the turn's own ending lands later; the session is killed either way
        await asyncio.sleep(KILL_POLL)


__all__ = [
    "AGENT_PAUSED",
    "SESSION_KILLED",
    "SESSION_PAUSED",
    "AgentPaused",
    "PauseOutcome",
    "PauseStatus",
    "kill",
    "pause",
    "pause_status",
    "refuse_message",
    "refuse_paused",
    "refuse_switched",
    "resume",
    "session_failed",
    "stop_error",
    "turn_held",
]
