"""`SessionPorts`: what every session operation works through, and nothing more.

The store, the dispatcher and the fanout (the ports a host plugs in), the lease TTL, this
process's turns (`LocalTurns`) and the session records this process has seen. Accepting a
message, settling a busy session, recording a decision, recovering and sweeping take this
object instead of the whole runtime, so none of them can reach the bundle, the model or
the caches, and none imports the runtime that composes them.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Protocol

from agentkit.engine.dispatch import Dispatcher
from agentkit.engine.fanout import Fanout
from agentkit.engine.fleet_switch import PauseSwitch
from agentkit.engine.folds.conversation import TurnState
from agentkit.engine.local_turns import LocalTurns
from agentkit.engine.turn.recorder import Recorder
from agentkit.events import ActionResult, Event, EventDraft
from agentkit.sessions import SessionRecord
from agentkit.store.base import Store


class InDoubtSettler(Protocol):
    """Finds what happened to the calls of a lost turn (`engine.tools.reconcile`)."""

    async def __call__(self, record: SessionRecord, state: TurnState) -> list[ActionResult]: ...


def new_turn_id() -> str:
    return "turn_" + secrets.token_urlsafe(12)


class SessionPorts:
    """The store, dispatcher and fanout of one runtime, its lease TTL and local turns.

    Hosts and tests may replace the dispatcher, the fanout or the TTL after the runtime is
    built (`AgentRuntime` forwards its attributes here), so they are read at each use.
    """

    __slots__ = (
        "_records",
        "agent_name",
        "dispatcher",
        "fanout",
        "in_doubt",
        "lease_ttl",
        "store",
        "switch",
        "turns",
    )

    def __init__(
        self,
        store: Store,
        dispatcher: Dispatcher,
        fanout: Fanout | None,
        lease_ttl: float,
        turns: LocalTurns,
    ) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.fanout = fanout
        self.lease_ttl = lease_ttl
        self.turns = turns
        # Settles the calls a crash left in doubt (`engine.tools.reconcile`); none: unknown.
        self.in_doubt: InDoubtSettler | None = None
        # The agent's kill switch (`engine.fleet_switch`), when the host has one.
        self.switch: PauseSwitch | None = None
        # The agent's name now (a reload may change it), for the spans of turns ended
        # outside the turn loop (`engine.turn.ending`).
        self.agent_name: Callable[[], str | None] = lambda: None
        # Session records seen by this process; only their immutable facts are used by turns.
        # Kept for bench/bench_dynamo_turn.py: a turn run by the process that accepted its
        # message reads no session item (one GetItem fewer among run_turn's requests). The
        # file store keeps the record it just wrote itself, so there it saves little.
        self._records: dict[str, SessionRecord] = {}

    def recorder(
        self,
        record: SessionRecord,
        turn_id: str | None = None,
        lease_holder: str | None = None,
        *,
        counted: bool = True,
    ) -> Recorder:
        """The recorder of `record`'s events; `counted=False` keeps them out of the metrics
        (a fork's copy of history, `engine.event_metrics`)."""
        return Recorder(
            self.store,
            record,
            self.fanout,
            turn_id,
            lease_holder,
            counted=counted,
            agent=self.agent_name(),
        )

    async def record(self, record: SessionRecord, drafts: list[EventDraft]) -> list[Event]:
        """Append drafts durably, then publish them: the single recording path."""
        return await self.recorder(record).append(drafts)

    async def settle_in_doubt(self, record: SessionRecord, state: TurnState) -> list[ActionResult]:
        """Results for the calls of a lost turn that may have run, where they can be found."""
        return [] if self.in_doubt is None else await self.in_doubt(record, state)

    def known_record(self, session_id: str) -> SessionRecord | None:
        """The session record this process has already seen, if any."""
        return self._records.get(session_id)

    def remember(self, record: SessionRecord) -> None:
        if len(self._records) >= 1024:
            self._records.pop(next(iter(self._records)))
        self._records[record.id] = record

    async def session_record(self, session_id: str) -> SessionRecord | None:
        """The session's record: the one seen already, else the store's."""
        return self.known_record(session_id) or await self.store.get_session(session_id)

    async def interrupt(self, session_id: str, turn_id: str | None = None) -> None:
        """Ask the session's running turn (`turn_id` only, when given) to stop at its next
        safe point."""
        self.turns.stop(session_id, turn_id)
        if not self.turns.runs_here(session_id):
            # The turn runs in another process (or has not started): it reads the flag.
            if turn_id is None:
                await self.store.set_interrupt(session_id, True)
            else:
                await self.store.request_interrupt(session_id, turn_id)


__all__ = ["InDoubtSettler", "SessionPorts", "new_turn_id"]
