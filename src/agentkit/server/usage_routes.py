"""`GET /v1/usage`: turns, tokens, cost and turn latency per hour or per UTC day, and
where a budget or the daily limit bit, folded from the recorded turns.

A caller sees the turns of their own sessions; an admin sees everyone's, or one
principal's with `?principal=` (anyone else naming another principal gets `403`, as the
session listing does). `?channel=` keeps one channel's sessions; `?since=` and `?until=`
(ISO-8601) keep the turns that ended in that window.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from agentkit.costs import parse_budget
from agentkit.engine.fleet import listing_owner
from agentkit.errors import BadRequest, HttpError
from agentkit.events import iso_utc
from agentkit.server.http_errors import JSONResponse
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.state import principal
from agentkit.sessions import Principal

__all__ = ["usage_router"]

Caller = Annotated[Principal, Depends(principal)]
MAX_SESSIONS = 5000  # sessions folded per request at most (newest first)


def usage_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    service = mount.service
    router = DeferredRouter(prefix=options.base_path(mount.slug), tags=[f"{mount.slug}: usage"])

    @router.get("/v1/usage")
    async def usage(
        caller: Caller,
        bucket: Literal["hour", "day"] = "hour",
        channel: Annotated[str | None, Query(max_length=200)] = None,
        principal_id: Annotated[str | None, Query(alias="principal", max_length=256)] = None,
        since: Annotated[str | None, Query(max_length=40)] = None,
        until: Annotated[str | None, Query(max_length=40)] = None,
    ) -> JSONResponse:
        """Per `bucket` (hour or UTC day): turns, failed turns, tokens in and out, cost,
        p50 and p95 turn latency and budget stops; the turns that parked on a budget, and
        per caller and day when the `principal_daily_*` limit was reached."""
        from agentkit.engine.folds.usage import turns_of, usage_report

        owner = listing_owner(caller, principal_id)
        lo, hi = _bound(since, "since"), _bound(until, "until")
        turns = []
        cursor: str | None = None
        seen = 0
        while seen < MAX_SESSIONS:
            page = await service.list_sessions(
                principal=caller, limit=100, cursor=cursor, owner=owner
            )
            for record in page.items:
                seen += 1
                if channel is not None and record.channel_id != channel:
                    continue
                if lo is not None and record.updated_at < lo:
                    continue
                try:
                    events = await service.read_events(record.id, principal=caller)
                except HttpError:
                    continue  # deleted between the listing and the read
                for t in turns_of(record.id, record.channel_id, record.principal, events):
                    if (lo is None or t.at >= lo) and (hi is None or t.at < hi):
                        turns.append(t)
            cursor = page.cursor
            if cursor is None:
                break
        budget = parse_budget(service.manifest.agent.options.get("budget"))
        body: dict[str, Any] = usage_report(turns, bucket, budget)
        return JSONResponse({"ok": True, **body, "truncated": cursor is not None})

    return router


def _bound(raw: str | None, name: str) -> str | None:
    """An ISO-8601 bound in the events' own form (UTC, milliseconds, `Z`)."""
    if raw is None:
        return None
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        # A time near year 1 or 9999 with an offset has no UTC form (OverflowError).
        return iso_utc(moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC))
    except (ValueError, OverflowError):
        raise BadRequest(f"{name} must be an ISO-8601 time") from None
