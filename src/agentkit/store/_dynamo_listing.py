"""A session listing's window of creation times, as a key condition on the listing index."""

from __future__ import annotations

from typing import Any

from agentkit.store import _dynamo_codec as codec
from agentkit.store._dynamo_schema import LIST_SORT_ATTRIBUTE
from agentkit.store.listing import StartedWindow


def window_on_sort_key(query: dict[str, Any], started: StartedWindow) -> None:
    """Narrow a listing query to `started` with a key condition on the index's sort key:
    DynamoDB reads only the items inside the window (no filter expression)."""
    low, high = started.low, started.high
    values = query["ExpressionAttributeValues"]
    if low is not None and high is not None:
        condition = "#sort BETWEEN :low AND :high"  # `high` is never a key: exclusive
    elif low is not None:
        condition = "#sort >= :low"
    elif high is not None:
        condition = "#sort < :high"
    else:
        return
    if low is not None:
        values[":low"] = codec.s(low)
    if high is not None:
        values[":high"] = codec.s(high)
    query["KeyConditionExpression"] += f" AND {condition}"
    query["ExpressionAttributeNames"]["#sort"] = LIST_SORT_ATTRIBUTE
