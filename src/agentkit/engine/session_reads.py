"""Reading sessions on a caller's behalf: the ownership check, listings, a listed
session's status and cost, its events and its pending approvals. Nothing here writes.

The functions at the end are bound on `AgentRuntime` as they are (the runtime is their
`Reader`), so their public signatures are written once, here.
"""

from __future__ import annotations

from typing import Protocol

from agentkit.engine.folds.pending_approvals import pending_approvals
from agentkit.engine.service import PendingApproval
from agentkit.engine.tails import SessionTails, Subscription
from agentkit.errors import Forbidden, InvalidId, NotFound, SessionNotFound
from agentkit.events import Event
from agentkit.sessions import (
    HTTP_KEY_PREFIX,
    Principal,
    SessionRecord,
    SessionStatus,
    conversation_key,
    fold_status_tail,
    session_id_of_key,
    validate_session_id,
)
from agentkit.store.base import Page, Store
from agentkit.store.listing import StartedWindow


class SessionReads:
    """One store's sessions as a principal may read them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._costs: dict[str, tuple[int, float | None]] = {}  # session -> (read up to, cost)

    async def owned(self, session_id: str, principal: Principal) -> SessionRecord:
        """The session's record; `NotFound` when there is none, `Forbidden` when it is
        another principal's."""
        try:
            validate_session_id(session_id)
            record = await self.store.get_session(session_id)
        except InvalidId:
            raise NotFound(f"no session {session_id[:80]!r}", code="session_not_found") from None
        if record is None:
            raise NotFound(f"no session {session_id!r}", code="session_not_found")
        if not principal.owns(record):
            raise Forbidden("not the owner of this session")
        return record

    async def by_key(self, channel_id: str, key: str, principal: Principal) -> SessionRecord | None:
        """The session a channel key names, or None; `Forbidden` when it is another's."""
        record = await find_by_key(self.store, channel_id, key)
        if record is not None and not principal.owns(record):
            raise Forbidden("not the owner of this session")
        return record

    async def list_sessions(
        self,
        principal: Principal,
        limit: int,
        cursor: str | None,
        owner: str | None = None,
        started: StartedWindow | None = None,
    ) -> Page:
        """`principal`'s sessions, or, for an admin, `owner`'s (everyone's when None)."""
        from agentkit.engine.fleet import listing_owner

        listed = listing_owner(principal, owner)
        return await self.store.list_sessions(listed, limit=limit, cursor=cursor, started=started)

    async def status(self, session_id: str) -> SessionStatus | None:
        """A listed session's status, folded from the tail of its events; None when it is
        gone. No ownership check: for callers that already hold the record (a listing)."""
        store = self.store
        try:
            length = await store.next_index(session_id)

            async def read(start: int, limit: int) -> list[Event]:
                return await store.read(session_id, start, limit)

            return await fold_status_tail(read, length)
        except (SessionNotFound, InvalidId):
            return None

    async def cost(self, session_id: str) -> float | None:
        """The dollars a listed session's turns cost so far (None when a price was unknown
        or the session is gone). Folded incrementally: each call reads only new events."""
        from agentkit.engine.folds.session_cost import session_cost

        try:
            return await session_cost(self.store, session_id, self._costs)
        except (SessionNotFound, InvalidId):
            return None

    async def events(self, session_id: str, principal: Principal, start: int) -> list[Event]:
        await self.owned(session_id, principal)
        return await self.store.read(session_id, start)

    async def follow(
        self, session_id: str, principal: Principal, start: int, timeout: float
    ) -> list[Event]:
        await self.owned(session_id, principal)
        return await self.store.follow(session_id, start, timeout)

    async def approvals(self, session_id: str, principal: Principal) -> list[PendingApproval]:
        await self.owned(session_id, principal)
        return pending_approvals(await self.store.read(session_id))


async def find_by_key(store: Store, channel_id: str, key: str) -> SessionRecord | None:
    """The session a channel key points at (an HTTP session by its conversation key)."""
    record = await store.find_session(channel_id, key)
    session_id = session_id_of_key(channel_id, key)
    if record is None and session_id is not None:
        found = await store.get_session(session_id)
        # Only a session that key really names: an HTTP one without a key of its own.
        if found is not None and conversation_key(found) == HTTP_KEY_PREFIX + found.id:
            record = found
    return record


class Reader(Protocol):
    """What the runtime's read methods take from it."""

    @property
    def reads(self) -> SessionReads: ...

    @property
    def tails(self) -> SessionTails: ...


async def get_session(rt: Reader, session_id: str, *, principal: Principal) -> SessionRecord:
    return await rt.reads.owned(session_id, principal)


async def session_by_key(
    rt: Reader, channel_id: str, key: str, *, principal: Principal
) -> SessionRecord | None:
    return await rt.reads.by_key(channel_id, key, principal)


async def list_sessions(
    rt: Reader,
    *,
    principal: Principal,
    limit: int = 50,
    cursor: str | None = None,
    owner: str | None = None,
    started: StartedWindow | None = None,
) -> Page:
    return await rt.reads.list_sessions(principal, limit, cursor, owner, started)


async def session_status(rt: Reader, session_id: str) -> SessionStatus | None:
    """A listed session's status (see `SessionReads.status`); None when it is gone."""
    return await rt.reads.status(session_id)


async def session_cost(rt: Reader, session_id: str) -> float | None:
    """A listed session's cost so far in dollars (see `SessionReads.cost`)."""
    return await rt.reads.cost(session_id)


async def read_events(
    rt: Reader, session_id: str, *, principal: Principal, start: int = 0
) -> list[Event]:
    return await rt.reads.events(session_id, principal, start)


async def follow_events(
    rt: Reader, session_id: str, *, principal: Principal, start: int, timeout: float
) -> list[Event]:
    return await rt.reads.follow(session_id, principal, start, timeout)


async def subscribe_events(
    rt: Reader, session_id: str, *, principal: Principal, start: int
) -> Subscription:
    await rt.reads.owned(session_id, principal)
    return rt.tails.subscribe(session_id, start)


__all__ = [
    "Reader",
    "SessionReads",
    "find_by_key",
    "follow_events",
    "get_session",
    "list_sessions",
    "read_events",
    "session_by_key",
    "session_cost",
    "session_status",
    "subscribe_events",
]
