"""Billable DynamoDB units and time in the store, measured from a client's own requests.

moto reports consumed capacity, but not by item size (a 32 KB item and a 100-byte one
both count as one unit there), so the cost bench sizes items itself, following DynamoDB's
published rules: an item's size is its attribute names plus their values; a write costs
one unit per started KB (two for a transactional write); a read costs one unit per
started 4 KB of everything the request returned (half for an eventually consistent one).
It also keeps the time spent waiting on the store, so that the bench can swap moto's
loopback latency for real DynamoDB's.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

WRITE_ITEMS = {"PutItem": "Item", "DeleteItem": "Key"}


def value_size(value: dict[str, Any]) -> int:
    ((kind, v),) = value.items()
    if kind in ("S", "B"):
        return len(v.encode() if isinstance(v, str) else v)
    if kind == "N":
        return len(str(v).lstrip("-").replace(".", "")) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + item_size(v)
    if kind == "L":
        return 3 + sum(1 + value_size(x) for x in v)
    if kind in ("SS", "NS", "BS"):
        return sum(value_size({kind[0]: x}) for x in v)
    return 0


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + value_size(v) for name, v in item.items())


@dataclass
class Meter:
    read_units: float = 0.0
    write_units: float = 0.0
    store_seconds: float = 0.0
    transactions: int = 0
    requests: int = 0
    _began: float = 0.0
    _strong: float = 1.0

    def reset(self) -> None:
        self.read_units = self.write_units = self.store_seconds = 0.0
        self.transactions = self.requests = 0

    def attach(self, client: Any) -> None:
        # The API's own parameters are seen before they are serialized; the timing
        # brackets the HTTP call itself.
        client.meta.events.register("before-parameter-build.dynamodb", self._size)
        client.meta.events.register("before-call.dynamodb", self._start)
        client.meta.events.register("after-call.dynamodb", self._after)

    def _start(self, **_: Any) -> None:
        self._began = time.perf_counter()

    def _size(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self._strong = 1.0 if params.get("ConsistentRead") else 0.5
        self.requests += 1
        op = model.name
        if op == "UpdateItem":
            # The billed size is the larger of the item before and after; its key and the
            # values written are a lower bound, which is what is counted here.
            values = params.get("ExpressionAttributeValues", {})
            size = item_size(params.get("Key", {})) + item_size(values)
            self.write_units += max(1, math.ceil(size / 1024))
        elif op in WRITE_ITEMS:
            item = params.get(WRITE_ITEMS[op], {})
            self.write_units += max(1, math.ceil(item_size(item) / 1024))
        elif op == "TransactWriteItems":
            self.transactions += 1
            for entry in params.get("TransactItems", []):
                ((_kind, body),) = entry.items()
                item = body.get("Item") or body.get("Key") or {}
                self.write_units += 2 * max(1, math.ceil(item_size(item) / 1024))
        elif op == "BatchWriteItem":
            for requests in params.get("RequestItems", {}).values():
                for r in requests:
                    item = r.get("PutRequest", {}).get("Item") or r.get("DeleteRequest", {})
                    self.write_units += max(1, math.ceil(item_size(item.get("Key", item)) / 1024))

    def _after(self, model: Any, parsed: dict[str, Any], **_: Any) -> None:
        self.store_seconds += time.perf_counter() - self._began
        op, strong = model.name, self._strong
        if op in ("Query", "Scan"):
            size = sum(item_size(i) for i in parsed.get("Items", []))
            self.read_units += strong * max(1, math.ceil(size / 4096))
        elif op == "GetItem":
            self.read_units += strong * max(1, math.ceil(item_size(parsed.get("Item", {})) / 4096))
        elif op == "BatchGetItem":
            for items in parsed.get("Responses", {}).values():
                for i in items:
                    self.read_units += strong * max(1, math.ceil(item_size(i) / 4096))
