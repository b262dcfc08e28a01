"""Calling DynamoDB: off the event loop, with errors translated and capacity counted.

Every request of the store goes through `Caller.call`, so no botocore exception passes
this edge and the counters benchmarks read (`request_count`, `consumed_write_units`, ...)
see all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentkit.errors import StoreError
from agentkit.store._offload import offload

T = TypeVar("T")

_WRITES = frozenset(
    {"put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item"}
)
_WITH_CAPACITY = _WRITES | {"get_item", "query", "batch_get_item", "scan", "transact_get_items"}
_THROTTLED = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "LimitExceededException",
    }
)


class ConditionFailed(StoreError):
    """A conditional write lost. `item` is the current item when the request asked for it."""

    def __init__(self, message: str, item: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.item = item


class TransactionCancelled(StoreError):
    """A transaction was cancelled; `reasons` holds one entry per item, in order."""

    def __init__(self, message: str, reasons: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.reasons = reasons

    @property
    def conflicted(self) -> bool:
        """True when another transaction touched the items (worth retrying as is)."""
        return any(r.get("Code") == "TransactionConflict" for r in self.reasons)

    @property
    def retryable(self) -> bool:
        """True when only conditions or conflicts cancelled it (not a malformed request)."""
        return all(
            r.get("Code") in (None, "None", "ConditionalCheckFailed", "TransactionConflict")
            for r in self.reasons
        )

    def failed_items(self) -> list[dict[str, Any] | None]:
        """The current items of the writes whose condition failed."""
        return [r.get("Item") for r in self.reasons if r.get("Code") == "ConditionalCheckFailed"]


def translate(exc: Exception, operation: str) -> StoreError:
    """The `StoreError` for a botocore exception (anything else is returned wrapped too)."""
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", "Unknown"))
        message = str(error.get("Message", ""))
        if code == "ConditionalCheckFailedException":
            response: dict[str, Any] = dict(exc.response)
            return ConditionFailed(f"{operation}: condition failed", response.get("Item"))
        if code == "TransactionCanceledException":
            reasons: list[dict[str, Any]] = [
                dict(r) for r in exc.response.get("CancellationReasons") or []
            ]
            return TransactionCancelled(f"{operation}: {message}", reasons)
        if code == "ResourceNotFoundException":
            return StoreError(f"DynamoDB table not found during {operation}: {message}")
        if code in _THROTTLED:
            return StoreError(f"DynamoDB throttled {operation} after retries: {message}")
        return StoreError(f"DynamoDB {operation} failed ({code}): {message}")
    if isinstance(exc, BotoCoreError):
        return StoreError(f"DynamoDB {operation} failed: {exc}")
    return StoreError(f"DynamoDB {operation} failed: {exc!r}")


def call_sync(client: Any, operation: str, **kwargs: Any) -> dict[str, Any]:
    """One synchronous request, errors translated (for stream consumers and setup code)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        result: dict[str, Any] = getattr(client, operation)(**kwargs)
    except (BotoCoreError, ClientError) as exc:
        raise translate(exc, operation) from exc
    return result


@dataclass
class Usage:
    """Requests and capacity units a store has used since it was made (or `reset`)."""

    request_count: int = 0
    consumed_read_units: float = 0.0
    consumed_write_units: float = 0.0
    estimated_write_units: float = 0.0
    per_operation: dict[str, int] = field(default_factory=dict)

    def reset(self) -> None:
        self.request_count = 0
        self.consumed_read_units = 0.0
        self.consumed_write_units = 0.0
        self.estimated_write_units = 0.0
        self.per_operation.clear()


class Caller:
    """Runs boto3 calls in worker threads and keeps `Usage` (updated on the loop thread)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.usage = Usage()

    async def call(self, operation: str, *, estimated_wcu: float = 0.0, **kwargs: Any) -> Any:
        if operation in _WITH_CAPACITY:
            kwargs.setdefault("ReturnConsumedCapacity", "TOTAL")
        self.usage.request_count += 1
        self.usage.per_operation[operation] = self.usage.per_operation.get(operation, 0) + 1
        self.usage.estimated_write_units += estimated_wcu
        fn: Callable[..., dict[str, Any]] = getattr(self.client, operation)
        try:
            result = await offload(fn, **kwargs)
        except Exception as exc:
            if isinstance(exc, StoreError):
                raise
            raise translate(exc, operation) from exc
        self._count(operation, result.get("ConsumedCapacity"))
        return result

    def _count(self, operation: str, consumed: Any) -> None:
        entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
        units = sum(float(e.get("CapacityUnits", 0.0) or 0.0) for e in entries)
        if operation in _WRITES:
            self.usage.consumed_write_units += units
        else:
            self.usage.consumed_read_units += units
