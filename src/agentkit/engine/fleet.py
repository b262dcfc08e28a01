"""Listing the fleet: a caller's sessions (or, for an admin, anyone's), filtered.

The store narrows a listing by owner and by a window of creation times through its index.
Status and cost are folded from each session's events, as every listed entry shows them,
so those two filters are applied here, over the store's pages: a page examines at most
`EXAMINED_PER_PAGE` sessions and may come back shorter than asked (even empty) with a
cursor to go on from. The cursor is the store's own (the listing key of the last session
examined), so every session is examined once however the pages fall.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from agentkit.errors import Forbidden
from agentkit.sessions import Principal, SessionRecord, SessionStatus
from agentkit.store.base import Page
from agentkit.store.ids import created_ms, encode_cursor
from agentkit.store.listing import StartedWindow

EXAMINED_PER_PAGE = 200  # sessions whose status (and cost) one page may fold


@dataclass(frozen=True, slots=True)
class FleetQuery:
    """What a listing asks for. Empty fields filter nothing."""

    statuses: frozenset[SessionStatus] = frozenset()
    principal: str | None = None  # an admin's choice of owner; others may name only themselves
    min_cost: float | None = None  # dollars; a session whose cost is unknown never matches
    started: StartedWindow | None = None

    @property
    def folds(self) -> bool:
        """Whether a filter needs what is folded from the events (status or cost)."""
        return bool(self.statuses) or self.min_cost is not None


@dataclass(frozen=True, slots=True)
class Listed:
    record: SessionRecord
    status: SessionStatus
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class FleetPage:
    sessions: list[Listed]
    cursor: str | None


class FleetService(Protocol):
    """What listing needs of an `AgentService`."""

    async def list_sessions(
        self,
        *,
        principal: Principal,
        limit: int = 50,
        cursor: str | None = None,
        owner: str | None = None,
        started: StartedWindow | None = None,
    ) -> Page: ...

    async def session_status(self, session_id: str) -> SessionStatus | None: ...

    async def session_cost(self, session_id: str) -> float | None: ...


def listing_owner(caller: Principal, asked: str | None) -> str | None:
    """Whose sessions `caller` lists: anyone's an admin names (None: everyone's), else the
    caller's own. Asking for another principal's is `403 forbidden`, never an empty list
    that would say whether they have any."""
    if caller.admin:
        return asked
    if asked is not None and asked != caller.id:
        raise Forbidden("only an admin may list another principal's sessions")
    return caller.id


async def list_fleet(
    service: FleetService,
    caller: Principal,
    query: FleetQuery,
    *,
    limit: int = 50,
    cursor: str | None = None,
) -> FleetPage:
    """One page of the sessions `caller` may see that match `query`, newest first."""
    listing_owner(caller, query.principal)  # refuse before reading anything
    if not query.folds:
        page = await _store_page(service, caller, query, limit, cursor)
        listed = await _fold(service, page.items, query)
        return FleetPage([entry for entry in listed if entry is not None], page.cursor)
    found: list[Listed] = []
    examined = 0
    while True:
        batch = min(max(limit, 20), EXAMINED_PER_PAGE - examined)
        page = await _store_page(service, caller, query, batch, cursor)
        listed = await _fold(service, page.items, query)
        for record, entry in zip(page.items, listed, strict=True):
            examined += 1
            cursor = encode_cursor(created_ms(record.created_at), record.id)
            if entry is not None and _matches(entry, query):
                found.append(entry)
            if len(found) == limit and (record is not page.items[-1] or page.cursor):
                return FleetPage(found, cursor)
        if page.cursor is None:
            return FleetPage(found, None)
        cursor = page.cursor
        if examined >= EXAMINED_PER_PAGE or len(found) == limit:
            return FleetPage(found, cursor)


async def _store_page(
    service: FleetService, caller: Principal, query: FleetQuery, limit: int, cursor: str | None
) -> Page:
    return await service.list_sessions(
        principal=caller,
        limit=limit,
        cursor=cursor,
        owner=query.principal,
        started=query.started,
    )


async def _fold(
    service: FleetService, records: Sequence[SessionRecord], query: FleetQuery
) -> list[Listed | None]:
    """Each record's status and cost (None for a session deleted since it was listed)."""
    # Each status reads only the tail of its stream; the listed sessions' reads overlap.
    statuses = await asyncio.gather(*(service.session_status(r.id) for r in records))
    costs = await asyncio.gather(*(service.session_cost(r.id) for r in records))
    return [
        Listed(r, status, cost) if status is not None else None
        for r, status, cost in zip(records, statuses, costs, strict=True)
    ]


def _matches(entry: Listed, query: FleetQuery) -> bool:
    if query.statuses and entry.status not in query.statuses:
        return False
    if query.min_cost is not None:
        return entry.cost_usd is not None and entry.cost_usd >= query.min_cost
    return True


__all__ = [
    "EXAMINED_PER_PAGE",
    "FleetPage",
    "FleetQuery",
    "FleetService",
    "Listed",
    "list_fleet",
    "listing_owner",
]
