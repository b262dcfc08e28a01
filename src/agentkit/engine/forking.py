"""Forking a session at one of its events: a new session whose history is a copy of the
original's events `0..k`, which goes on from there on its own.

The fork's stream starts with `session.forked {fromSessionId, atIndex}`; the copy follows,
each event one index later than in the original (a `context.compacted` is moved with it).
The fork gets an HTTP continuation token of its own, its own `agent.bound`, and turn ids of
its own (the same turn in two sessions must never be mistaken for one). The original is
only read.

Where the cut falls inside a turn:

- a turn parked on an approval stays parked in the fork: its calls can be approved or
  denied there (the end of the step that asked, recorded just after the request in the
  original, is copied with it, so the decision can resume the turn);
- any other unfinished turn is ended in the fork (`turn.failed`, nothing re-run), so the
  fork's next message starts a fresh turn from that point.
"""

from __future__ import annotations

import secrets
from typing import Protocol

from agentkit.engine import event_metrics
from agentkit.engine.binding import agent_bound
from agentkit.engine.folds.conversation import TurnState, fold_turn, open_turns
from agentkit.engine.folds.forked import SHIFT
from agentkit.engine.ports import SessionPorts, new_turn_id
from agentkit.engine.service import Forked
from agentkit.errors import BadRequest, Conflict
from agentkit.events import (
    Event,
    EventDraft,
    EventType,
    Payload,
    SessionForked,
    SessionWaiting,
    TurnFailed,
    draft,
)
from agentkit.project.digest import manifest_digest
from agentkit.project.manifest import Manifest
from agentkit.sessions import (
    HTTP_CHANNEL,
    Principal,
    SessionRecord,
    hash_token,
    new_http_token,
    new_session_id,
)


class Forker(Protocol):
    """What forking takes from the runtime."""

    @property
    def ports(self) -> SessionPorts: ...

    @property
    def manifest(self) -> Manifest: ...


def cut_turn_error(at_index: int) -> str:
    """The `turn.failed` error of a turn the fork's cut fell inside."""
    return f"the session was forked at event {at_index}, inside this turn; it ends here"


async def fork_session(
    rt: Forker, source: SessionRecord, at_index: object, *, principal: Principal
) -> Forked:
    """Fork `source` (already checked to be the caller's) at event `at_index`."""
    store = rt.ports.store
    if isinstance(at_index, bool) or not isinstance(at_index, int) or at_index < 0:
        raise BadRequest("atIndex must be a non-negative integer")
    length = await store.next_index(source.id)
    if at_index >= length:
        raise BadRequest(
            f"atIndex {at_index} is past the end of the stream "
            f"(it has {length} events, 0 to {length - 1})"
        )
    original = await store.read(source.id)
    prefix = original[: at_index + 1]
    token = new_http_token()
    record = SessionRecord(
        id=new_session_id(),
        channel_id=HTTP_CHANNEL,
        mode=source.mode,
        principal=principal.id,
        token_hash=hash_token(token),
    )
    await store.create_session(record)
    rt.ports.remember(record)
    # Held while the copy lands, so the sweeper never mistakes a half-written fork's open
    # turn for one whose worker died.
    holder = "fork:" + secrets.token_hex(6)
    if not await store.acquire_lease(record.id, holder, rt.ports.lease_ttl):
        raise Conflict("the new session is busy", code="session_busy")
    try:
        turns = _TurnIds()
        head = SessionForked(
            from_session_id=source.id,
            at_index=at_index,
            manifest_digest=manifest_digest(rt.manifest),
        )
        drafts = [draft(head)]
        drafts += [_copy(ev, record, rt.manifest, turns) for ev in prefix]
        drafts += _step_ends(prefix, original[at_index + 1 :], turns)
        recorder = rt.ports.recorder(record, lease_holder=holder, counted=False)
        copied = await recorder.append(drafts)
        carried = await _end_cut_turns(rt.ports, record, copied, at_index, holder)
        event_metrics.approvals_carried(carried)
    finally:
        await store.release_lease(record.id, holder)
    return Forked(record.id, token, source.id, at_index)


class _TurnIds:
    """The fork's turn id for each of the original's (made on first sight)."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}

    def __call__(self, turn_id: str | None) -> str | None:
        if turn_id is None:
            return None
        new = self._ids.get(turn_id)
        if new is None:
            new = self._ids[turn_id] = new_turn_id()
        return new


def _copy(ev: Event, record: SessionRecord, manifest: Manifest, turns: _TurnIds) -> EventDraft:
    data = ev.data
    if ev.type == EventType.AGENT_BOUND:
        # The original's names its own URLs: the fork is bound, and found, under its own.
        data = agent_bound(manifest, record.id).wire()
    elif ev.type == EventType.CONTEXT_COMPACTED and isinstance(data.get("throughIndex"), int):
        data = {**data, "throughIndex": data["throughIndex"] + SHIFT}
    return EventDraft(type=ev.type, data=dict(data), turn_id=turns(ev.turn_id), at=ev.at)


def _step_ends(prefix: list[Event], rest: list[Event], turns: _TurnIds) -> list[EventDraft]:
    """The `step.completed` of a parked turn's step cut just between its approval request
    and its end (the next event of that turn), so the decision can resume it."""
    out: list[EventDraft] = []
    for turn_id in open_turns(prefix):
        state = fold_turn(prefix, turn_id)
        if not (state.parked and state.step_open):
            continue
        end = next((e for e in rest if e.turn_id == turn_id), None)
        if end is not None and end.type == EventType.STEP_COMPLETED:
            out.append(EventDraft(end.type, dict(end.data), turns(turn_id), end.at))
    return out


def stays_parked(state: TurnState) -> bool:
    """Whether a turn cut by a fork can wait on its approvals in the fork: parked at a
    step's end, every open call waiting on a decision (so deciding them resumes it)."""
    return (
        state.parked
        and not state.step_open
        and all(p.approval_requested and not p.started for p in state.pending.values())
    )


async def _end_cut_turns(
    ports: SessionPorts, record: SessionRecord, copied: list[Event], at_index: int, holder: str
) -> int:
    """End every unfinished turn of the copy that cannot wait on its approvals; returns how
    many approvals the copy still waits on."""
    carried = 0
    for turn_id in open_turns(copied):
        state = fold_turn(copied, turn_id)
        if stays_parked(state):
            carried += sum(1 for p in state.pending.values() if p.decision is None)
            continue
        payloads: list[Payload] = [
            TurnFailed(error=cut_turn_error(at_index), usage=state.usage, cost_usd=state.cost_usd)
        ]
        if record.mode == "chat":
            payloads.append(SessionWaiting())
        await ports.recorder(record, turn_id, holder, counted=False).emit(*payloads)
    return carried


__all__ = ["cut_turn_error", "fork_session", "stays_parked"]
