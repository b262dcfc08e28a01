"""What a message to a busy session does: the `queue` and `reject` strategies.

`interrupt` (the default) is the follow-up path of `AgentRuntime`. The other two never
interrupt anything:

- `reject`: the session is checked and the message recorded under the session's lease, so
  of two messages racing for an idle session exactly one becomes a turn and the other gets
  409 `session_busy`; a message to a running or parked session gets 409 too.
- `queue`: a message for a busy session is recorded as `message.queued` (outside the
  conversation, no turn id on the event) and becomes a turn once the session is idle, in
  the order queued. Whoever releases the session drains the queue: the turn runner after
  its turn, and the queuer itself right after queueing (in case the turn ended between
  its check and its append), so no message waits on a turn that is already gone. With
  tracing on, the queued turn continues the trace of the request that queued it.

Both only use the store's lease and the event stream, so they hold across processes.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal

from agentkit.engine.ports import SessionPorts, new_turn_id
from agentkit.engine.trace_context import carrier, continued_from
from agentkit.errors import Conflict
from agentkit.events import Event, EventType, MessageQueued, MessageReceived, draft
from agentkit.events.carried import Carried
from agentkit.sessions import Principal, SessionRecord, SessionStatus, fold_status_recent

OnBusy = Literal["interrupt", "queue", "reject"]
ON_BUSY: tuple[str, ...] = ("interrupt", "queue", "reject")
BUSY = (SessionStatus.RUNNING, SessionStatus.AWAITING_APPROVAL)


def agent_on_busy(manifest: Any) -> OnBusy:
    """The agent's default strategy (`define_agent(on_busy=...)`), else `interrupt`."""
    value = (manifest.agent.options or {}).get("on_busy")
    if value == "queue":
        return "queue"
    if value == "reject":
        return "reject"
    return "interrupt"


class _Queued:
    """`message.queued` events so far, and the queue ids already accepted as a turn."""

    __slots__ = ("accepted", "queued")

    def __init__(self) -> None:
        self.queued: list[Event] = []
        self.accepted: set[Any] = set()

    def copy(self) -> _Queued:
        other = _Queued.__new__(_Queued)
        other.queued, other.accepted = list(self.queued), set(self.accepted)
        return other

    def add(self, ev: Event) -> None:
        if ev.type == EventType.MESSAGE_QUEUED:
            self.queued.append(ev)
        elif ev.type == EventType.MESSAGE_RECEIVED and ev.data.get("queueId"):
            self.accepted.add(ev.data.get("queueId"))


# Looked at after every turn: carried on per session, so a long history is not read again.
_QUEUES: Carried[_Queued] = Carried(_Queued)


def pending_queue(events: Iterable[Event]) -> list[Event]:
    """`message.queued` events not yet accepted as a turn, oldest first."""
    state = _QUEUES.over(events)
    if not state.queued:  # the usual case
        return []
    return [e for e in state.queued if e.data.get("queueId") not in state.accepted]


async def accept_when_idle(
    ports: SessionPorts,
    record: SessionRecord,
    message: str,
    principal: Principal,
    source: str,
    on_busy: OnBusy,
    *,
    claim: Callable[[], Awaitable[None]] | None = None,
    turn_id: str | None = None,
) -> str:
    """Accept `message` under `reject` or `queue`; returns its turn id (`turn_id`, else a
    new one): the turn's, or the queue id of a queued message, which its turn takes.

    `claim` runs once the message is sure to be kept (before anything is recorded), e.g.
    an HTTP follow-up's token rotation; its error leaves nothing recorded.
    """
    turn_id = turn_id or new_turn_id()
    holder = "accept:" + secrets.token_hex(6)
    leased = await ports.store.acquire_lease(record.id, holder, ports.lease_ttl)
    try:
        events = await ports.store.read(record.id) if leased else []
        idle = leased and fold_status_recent(events) not in BUSY and not pending_queue(events)
        if not idle and on_busy == "reject":
            raise Conflict("the session is busy", code="session_busy")
        if claim is not None:
            await claim()
        ports.turns.forget_stop(record.id)
        if idle:
            await ports.store.set_interrupt(record.id, False)
            received = MessageReceived(message=message, principal=principal.id, source=source)
            await ports.record(record, [draft(received, turn_id=turn_id)])
        else:
            queued = MessageQueued(
                queue_id=turn_id,
                message=message,
                principal=principal.id,
                source=source,
                trace_context=carrier() or None,  # its turn joins this request's trace
            )
            await ports.record(record, [draft(queued)])
    finally:
        if leased:
            await ports.store.release_lease(record.id, holder)
    if idle:
        await ports.dispatcher.dispatch(record.id, turn_id)
    else:
        await drain_queue(ports, record.id)
    return turn_id


async def drain_queue(ports: SessionPorts, session_id: str) -> bool:
    """Turn the oldest queued message into a turn if the session is idle; True if it did.

    Cheap when nothing is queued (one read, no lease).
    """
    events = await ports.store.read(session_id)
    if not pending_queue(events):
        return False
    record = await ports.session_record(session_id)
    if record is None:
        return False
    holder = "queue:" + secrets.token_hex(6)
    if not await ports.store.acquire_lease(session_id, holder, ports.lease_ttl):
        return False  # whoever holds it drains when they let go
    try:
        events = await ports.store.read(session_id)
        waiting = pending_queue(events)
        if not waiting or fold_status_recent(events) in BUSY:
            return False
        head = waiting[0].data
        turn_id = str(head["queueId"])
        received = MessageReceived(
            message=str(head.get("message", "")),
            principal=head.get("principal"),
            source=head.get("source"),
            queue_id=turn_id,
        )
        await ports.store.set_interrupt(session_id, False)
        await ports.record(record, [draft(received, turn_id=turn_id)])
    finally:
        await ports.store.release_lease(session_id, holder)
    # In the trace of the request that queued the message, not of the turn that drains it.
    with continued_from(head.get("traceContext")):
        await ports.dispatcher.dispatch(session_id, turn_id)
    return True
