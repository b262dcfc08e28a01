"""The query of a session listing (`GET /v1/sessions`), from the client's keywords."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any


def listing_params(
    *,
    page_size: int,
    status: str | Iterable[str] | None = None,
    principal: str | None = None,
    min_cost: float | None = None,
    started_after: datetime | str | None = None,
    started_before: datetime | str | None = None,
) -> dict[str, Any]:
    """The query parameters for one page (the cursor is added per page)."""
    params: dict[str, Any] = {"limit": page_size}
    if status is not None:
        params["status"] = status if isinstance(status, str) else ",".join(status)
    if principal is not None:
        params["principal"] = principal
    if min_cost is not None:
        params["minCost"] = min_cost
    if started_after is not None:
        params["startedAfter"] = _iso(started_after)
    if started_before is not None:
        params["startedBefore"] = _iso(started_before)
    return params


def page_params(query: dict[str, Any], cursor: str | None) -> dict[str, Any]:
    """The query of one page: the listing's, from `cursor` when there is one."""
    return {**query, "cursor": cursor} if cursor else dict(query)


def _iso(moment: datetime | str) -> str:
    if isinstance(moment, str):
        return moment
    if moment.tzinfo is None:  # the server reads a time without a zone as UTC too
        moment = moment.replace(tzinfo=UTC)
    return moment.isoformat()


__all__ = ["listing_params", "page_params"]
