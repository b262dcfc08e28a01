"""`GET /v1/sessions`: its query (paging and the fleet filters) and its answer.

The query is read by hand rather than declared as FastAPI parameters (see the route), so
each bad value gets a `400 bad_request` naming it, in the documented error shape.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.requests import Request

from agentkit.engine.fleet import FleetQuery, FleetService, list_fleet
from agentkit.errors import BadRequest, InvalidId
from agentkit.server.schemas import SessionList, SessionSummary
from agentkit.sessions import Principal, SessionStatus
from agentkit.store.listing import StartedWindow

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_STATUSES = ", ".join(s.value for s in SessionStatus)
_TIME_HINT = "an ISO-8601 time such as 2026-01-01T09:30:00Z"

FILTER_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "status",
        "in": "query",
        "required": False,
        "schema": {"type": "string"},
        "description": f"Only sessions in these statuses (comma-separated: {_STATUSES}).",
    },
    {
        "name": "principal",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "maxLength": 256},
        "description": "Only this principal's sessions. Admins only; others may name only "
        "themselves (403 otherwise).",
    },
    {
        "name": "minCost",
        "in": "query",
        "required": False,
        "schema": {"type": "number", "minimum": 0},
        "description": "Only sessions that cost at least this many dollars so far.",
    },
    {
        "name": "startedAfter",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "format": "date-time"},
        "description": "Only sessions created at or after this time (ISO-8601).",
    },
    {
        "name": "startedBefore",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "format": "date-time"},
        "description": "Only sessions created before this time (ISO-8601).",
    },
]


def fleet_query(request: Request) -> FleetQuery:
    """The filters of a listing, or a `BadRequest` naming the bad one."""
    params = request.query_params
    after = _time_ms(params.get("startedAfter"), "startedAfter")
    before = _time_ms(params.get("startedBefore"), "startedBefore")
    return FleetQuery(
        statuses=_statuses(params.getlist("status")),
        principal=_principal(params.get("principal")),
        min_cost=_min_cost(params.get("minCost")),
        started=None if after is None and before is None else StartedWindow(after, before),
    )


async def session_list(
    service: FleetService, caller: Principal, query: FleetQuery, limit: int, cursor: str | None
) -> SessionList:
    """One page of the listing, as the route answers it."""
    try:
        page = await list_fleet(service, caller, query, limit=limit, cursor=cursor)
    except InvalidId as exc:
        raise BadRequest(str(exc)) from None
    except (ValueError, KeyError, TypeError):
        raise BadRequest("invalid cursor") from None
    return SessionList(
        sessions=[
            SessionSummary(
                session_id=e.record.id,
                channel_id=e.record.channel_id,
                mode=e.record.mode,
                status=e.status,
                principal=e.record.principal,
                continuation_key=e.record.continuation_key,
                created_at=e.record.created_at,
                updated_at=e.record.updated_at,
                cost_usd=e.cost_usd,
            )
            for e in page.sessions
        ],
        cursor=page.cursor,
    )


def _statuses(raw: list[str]) -> frozenset[SessionStatus]:
    wanted: set[SessionStatus] = set()
    for value in (v.strip() for item in raw for v in item.split(",")):
        if not value:
            continue
        try:
            wanted.add(SessionStatus(value))
        except ValueError:
            raise BadRequest(f"status {value[:40]!r} is not one of {_STATUSES}") from None
    return frozenset(wanted)


def _principal(raw: str | None) -> str | None:
    if raw is None:
        return None
    if not raw.strip() or len(raw) > 256:
        raise BadRequest("principal must be a principal id of 1 to 256 characters")
    return raw


def _min_cost(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise BadRequest("minCost must be a number of dollars, zero or more")
    return value


def _time_ms(raw: str | None, name: str) -> int | None:
    """Epoch milliseconds of an ISO-8601 time (no zone: UTC), rounded up, so that a
    session's whole-millisecond creation time compares with it exactly."""
    if raw is None:
        return None
    try:
        moment = datetime.fromisoformat(raw.strip())
    except ValueError:
        raise BadRequest(f"{name} must be {_TIME_HINT}, not {raw[:60]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    micros = (moment - _EPOCH) // timedelta(microseconds=1)
    return max(0, -(-micros // 1000))


__all__ = ["FILTER_PARAMETERS", "fleet_query", "session_list"]
