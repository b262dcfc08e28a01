"""The state-table half of `DynamoDBStore`: sessions, leases, interrupts, reminders, claims.

See the design notes at the top of `agentkit.store.dynamodb`.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable
from typing import Any

from agentkit.errors import SessionExists, SessionNotFound
from agentkit.events import now_iso
from agentkit.reminders import ReminderRecord
from agentkit.sessions import SessionRecord
from agentkit.store import _dynamo_codec as codec
from agentkit.store._dynamo_calls import Caller, ConditionFailed, TransactionCancelled
from agentkit.store._dynamo_listing import window_on_sort_key
from agentkit.store._dynamo_schema import (
    ALL_SESSIONS_INDEX,
    LIST_ALL_ATTRIBUTE,
    LIST_SORT_ATTRIBUTE,
    PRINCIPAL_ATTRIBUTE,
    PRINCIPAL_INDEX,
    STATE_PARTITION_KEY,
    TTL_ATTRIBUTE,
)
from agentkit.store._evalruns import newest_first, run_id_of
from agentkit.store.base import Claim, Lease, Page
from agentkit.store.ids import (
    decode_cursor,
    hash_key,
    validate_idempotency_key,
    validate_name,
    validate_session_id,
)
from agentkit.store.listing import StartedWindow

# How often a transaction cancelled only by a conflict with another one is tried.
CONFLICT_ATTEMPTS = 5

_EXISTS = "attribute_exists(#pk)"
_NOT_EXISTS = "attribute_not_exists(#pk)"
_PK = {"#pk": STATE_PARTITION_KEY}


class SessionOps:
    """Everything of the `Store` port that lives in the state table."""

    def __init__(self, caller: Caller, table: str, clock: Callable[[], float]) -> None:
        self._caller = caller
        self._state = table
        self._clock = clock

    # -- helpers ---------------------------------------------------------------------------

    async def _get_session_item(
        self, session_id: str, *, names: dict[str, str] | None = None
    ) -> dict[str, Any] | None:
        """The session item (consistent read); only the attributes in `names` if given."""
        kwargs: dict[str, Any] = {
            "TableName": self._state,
            "Key": codec.session_key(session_id),
            "ConsistentRead": True,
        }
        if names:
            kwargs["ProjectionExpression"] = ", ".join(names)
            kwargs["ExpressionAttributeNames"] = names
        result = await self._caller.call("get_item", **kwargs)
        item: dict[str, Any] | None = result.get("Item")
        return item

    async def _session_exists(self, session_id: str) -> bool:
        return bool(await self._get_session_item(session_id, names=_PK))

    async def _update_session(
        self,
        session_id: str,
        update: str,
        condition: str,
        names: dict[str, str],
        values: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Run a conditional update of the session item. None on success; on a failed
        condition the current item, or `SessionNotFound` if there is none."""
        kwargs: dict[str, Any] = {
            "TableName": self._state,
            "Key": codec.session_key(session_id),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {**(_PK if "#pk" in condition else {}), **names},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            "estimated_wcu": 1.0,
        }
        if values:
            kwargs["ExpressionAttributeValues"] = values
        try:
            await self._caller.call("update_item", **kwargs)
        except ConditionFailed as lost:
            if not lost.item:
                raise SessionNotFound(session_id) from None
            return lost.item
        return None

    # -- sessions --------------------------------------------------------------------------

    async def create_session(self, record: SessionRecord) -> None:
        validate_session_id(record.id)
        item = codec.session_to_item(record)
        put: dict[str, Any] = {
            "TableName": self._state,
            "Item": item,
            "ConditionExpression": _NOT_EXISTS,
            "ExpressionAttributeNames": _PK,
        }
        if record.continuation_key is None:
            try:
                await self._caller.call("put_item", **put, estimated_wcu=codec.write_units(item))
            except ConditionFailed:
                raise SessionExists(record.id) from None
            return
        codec.check_key_text(record.channel_id, "channel id")
        codec.check_key_text(record.continuation_key, "continuation key")
        pointer = {
            **codec.ckey_key(record.channel_id, record.continuation_key),
            "sessionId": codec.s(record.id),
        }
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            try:
                await self._caller.call(
                    "transact_write_items",
                    TransactItems=[
                        {"Put": put},
                        {"Put": {"TableName": self._state, "Item": pointer}},
                    ],
                    estimated_wcu=2.0 * (codec.write_units(item) + 1),
                )
                return
            except TransactionCancelled as cancelled:
                if cancelled.failed_items():
                    raise SessionExists(record.id) from None
                # Another transaction held one of the items; nothing was written, so the
                # same request may go again (botocore does not retry this one itself).
                if not cancelled.conflicted or attempt == CONFLICT_ATTEMPTS:
                    raise
                await asyncio.sleep(0.02 * 2**attempt)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        validate_session_id(session_id)
        item = await self._get_session_item(session_id)
        return codec.session_from_item(item) if item else None

    async def list_sessions(
        self,
        principal: str | None,
        *,
        limit: int = 50,
        cursor: str | None = None,
        started: StartedWindow | None = None,
    ) -> Page:
        if principal is None:
            index, part_name, part_value = ALL_SESSIONS_INDEX, LIST_ALL_ATTRIBUTE, "session"
        else:
            index, part_name, part_value = PRINCIPAL_INDEX, PRINCIPAL_ATTRIBUTE, principal
        limit = max(1, limit)
        if part_value == "" or (started is not None and started.empty):
            return Page()  # nobody is the empty principal (index keys can't be empty)
        kwargs: dict[str, Any] = {
            "TableName": self._state,
            "IndexName": index,
            "KeyConditionExpression": "#part = :part",
            "ExpressionAttributeNames": {"#part": part_name},
            "ExpressionAttributeValues": {":part": codec.s(part_value)},
            "ScanIndexForward": False,
        }
        if started is not None:
            window_on_sort_key(kwargs, started)
        if cursor is not None:
            _, after_id = decode_cursor(cursor)
            kwargs["ExclusiveStartKey"] = {
                **codec.session_key(after_id),
                part_name: codec.s(part_value),
                LIST_SORT_ATTRIBUTE: codec.s(cursor),
            }
        items: list[dict[str, Any]] = []
        while len(items) <= limit:  # one more than asked says whether a next page exists
            kwargs["Limit"] = limit + 1 - len(items)
            page = await self._caller.call("query", **kwargs)
            items.extend(page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        shown = items[:limit]
        next_cursor = None
        if len(items) > limit:
            next_cursor = codec.get_s(shown[-1], LIST_SORT_ATTRIBUTE)
        return Page(items=[codec.session_from_item(i) for i in shown], cursor=next_cursor)

    async def find_session(self, channel_id: str, continuation_key: str) -> SessionRecord | None:
        codec.check_key_text(channel_id, "channel id")
        codec.check_key_text(continuation_key, "continuation key")
        result = await self._caller.call(
            "get_item",
            TableName=self._state,
            Key=codec.ckey_key(channel_id, continuation_key),
            ConsistentRead=True,
        )
        session_id = codec.get_s(result.get("Item") or {}, "sessionId")
        if session_id is None:
            return None
        record = await self.get_session(session_id)
        if record is None or (record.channel_id, record.continuation_key) != (
            channel_id,
            continuation_key,
        ):
            return None
        return record

    async def touch_session(self, session_id: str) -> None:
        validate_session_id(session_id)
        await self._update_session(
            session_id,
            "SET #u = :now",
            _EXISTS,
            {"#u": "updatedAt"},
            {":now": codec.s(now_iso())},
        )

    async def rotate_token(self, session_id: str, expected_hash: str, new_hash: str) -> bool:
        validate_session_id(session_id)
        try:
            lost = await self._update_session(
                session_id,
                "SET #t = :new, #u = :now",
                "#t = :old",
                {"#t": "tokenHash", "#u": "updatedAt"},
                {
                    ":new": codec.s(new_hash),
                    ":old": codec.s(expected_hash),
                    ":now": codec.s(now_iso()),
                },
            )
        except SessionNotFound:
            return False
        return lost is None

    async def _delete_session_items(self, record: SessionRecord) -> None:
        """Remove the session item and its continuation-key pointer (if still its own)."""
        await self._caller.call(
            "delete_item",
            TableName=self._state,
            Key=codec.session_key(record.id),
            estimated_wcu=1.0,
        )
        if record.continuation_key is None:
            return
        with contextlib.suppress(ConditionFailed):  # the key may belong to a newer session
            await self._caller.call(
                "delete_item",
                TableName=self._state,
                Key=codec.ckey_key(record.channel_id, record.continuation_key),
                ConditionExpression="sessionId = :id",
                ExpressionAttributeValues={":id": codec.s(record.id)},
                estimated_wcu=1.0,
            )

    # -- lease and interrupt ---------------------------------------------------------------

    async def acquire_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        return await self._write_lease(
            session_id,
            holder,
            ttl,
            "SET #h = :h, #e = :e",
            "attribute_not_exists(#h) OR #h = :h OR #e <= :now",
        )

    async def renew_lease(self, session_id: str, holder: str, ttl: float) -> bool:
        return await self._write_lease(
            session_id, holder, ttl, "SET #e = :e", "#h = :h AND #e > :now"
        )

    async def _write_lease(
        self, session_id: str, holder: str, ttl: float, update: str, condition: str
    ) -> bool:
        """Write the lease (`#h`, `#e` = now + `ttl`) if `condition` holds, else False."""
        validate_session_id(session_id)
        now = self._clock()
        lost = await self._update_session(
            session_id,
            update,
            f"{_EXISTS} AND ({condition})",
            _LEASE_NAMES,
            {":h": codec.s(holder), ":e": codec.n(float(now + ttl)), ":now": codec.n(float(now))},
        )
        return lost is None

    async def release_lease(self, session_id: str, holder: str) -> None:
        validate_session_id(session_id)
        with contextlib.suppress(SessionNotFound):
            await self._update_session(
                session_id, "REMOVE #h, #e", "#h = :h", _LEASE_NAMES, {":h": codec.s(holder)}
            )

    async def get_lease(self, session_id: str) -> Lease | None:
        validate_session_id(session_id)
        item = await self._get_session_item(session_id, names=_LEASE_NAMES)
        holder = codec.get_s(item or {}, "leaseHolder")
        expires = codec.get_n(item or {}, "leaseExpires")
        if holder is None or expires is None or expires <= self._clock():
            return None
        return Lease(holder=holder, expires_at=expires)

    async def set_interrupt(self, session_id: str, requested: bool) -> None:
        validate_session_id(session_id)
        await self._update_session(
            session_id, "SET #i = :i", _EXISTS, {"#i": "interrupt"}, {":i": {"BOOL": requested}}
        )

    async def request_interrupt(
        self, session_id: str, turn_id: str, *, token_hash: str | None = None
    ) -> bool:
        validate_session_id(session_id)
        condition, names = _EXISTS, {"#i": "interrupt"}
        values: dict[str, Any] = {":i": codec.s(turn_id)}
        if token_hash is not None:
            condition += " AND #t = :t"
            names["#t"] = "tokenHash"
            values[":t"] = codec.s(token_hash)
        lost = await self._update_session(session_id, "SET #i = :i", condition, names, values)
        return lost is None

    async def interrupt_requested(self, session_id: str, turn_id: str | None = None) -> bool:
        validate_session_id(session_id)
        item = await self._get_session_item(session_id, names={"#i": "interrupt"})
        flag = (item or {}).get("interrupt") or {}
        if "S" in flag:  # `request_interrupt`: that turn only
            return bool(flag["S"] == turn_id)
        return bool(flag.get("BOOL", False))

    # -- reminders -------------------------------------------------------------------------

    async def put_reminder(self, reminder: ReminderRecord) -> None:
        validate_name(reminder.id, "reminder id")
        item = codec.reminder_to_item(reminder)
        await self._caller.call(
            "put_item", TableName=self._state, Item=item, estimated_wcu=codec.write_units(item)
        )

    async def get_reminder(self, reminder_id: str) -> ReminderRecord | None:
        validate_name(reminder_id, "reminder id")
        result = await self._caller.call(
            "get_item",
            TableName=self._state,
            Key=codec.reminder_key(reminder_id),
            ConsistentRead=True,
        )
        item = result.get("Item")
        return codec.reminder_from_item(item) if item else None

    async def list_reminders(self, *, active_only: bool = False) -> list[ReminderRecord]:
        items = await self._partition(codec.REMINDER_PK)
        found = [codec.reminder_from_item(i) for i in items]
        if active_only:
            found = [r for r in found if r.status == "active"]
        return sorted(found, key=lambda r: (r.created_at, r.id))

    async def delete_reminder(self, reminder_id: str) -> bool:
        validate_name(reminder_id, "reminder id")
        result = await self._caller.call(
            "delete_item",
            TableName=self._state,
            Key=codec.reminder_key(reminder_id),
            ReturnValues="ALL_OLD",
            estimated_wcu=1.0,
        )
        return bool(result.get("Attributes"))

    # -- eval runs -------------------------------------------------------------------------

    async def put_eval_run(self, snapshot: dict[str, Any]) -> None:
        item = codec.eval_run_to_item(run_id_of(snapshot), snapshot)
        await self._caller.call(
            "put_item", TableName=self._state, Item=item, estimated_wcu=codec.write_units(item)
        )

    async def get_eval_run(self, run_id: str) -> dict[str, Any] | None:
        validate_name(run_id, "eval run id")
        result = await self._caller.call(
            "get_item", TableName=self._state, Key=codec.eval_run_key(run_id), ConsistentRead=True
        )
        item = result.get("Item")
        return codec.eval_run_from_item(item) if item else None

    async def list_eval_runs(self) -> list[dict[str, Any]]:
        items = await self._partition(codec.EVAL_RUN_PK)
        return newest_first([codec.eval_run_from_item(i) for i in items])

    async def _partition(self, pk: str) -> list[dict[str, Any]]:
        """Every item of the state table's partition `pk` (a consistent read)."""
        return await self._query_all(
            {
                "TableName": self._state,
                "KeyConditionExpression": "#pk = :pk",
                "ExpressionAttributeNames": _PK,
                "ExpressionAttributeValues": {":pk": codec.s(pk)},
                "ConsistentRead": True,
            }
        )

    async def _query_all(self, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        """Every item a query finds, page after page."""
        items: list[dict[str, Any]] = []
        while True:
            page = await self._caller.call("query", **kwargs)
            items.extend(page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                return items
            kwargs = {**kwargs, "ExclusiveStartKey": page["LastEvaluatedKey"]}

    # -- idempotency -----------------------------------------------------------------------

    async def claim(self, key: str, ttl: float) -> bool:
        validate_idempotency_key(key)
        now = self._clock()
        item = {
            **codec.claim_key(hash_key(key)),
            TTL_ATTRIBUTE: codec.n(math.ceil(now + ttl)),
            "state": codec.s("started"),
        }
        try:
            # TTL deletion is lazy (it can lag for days), so an expired record still in the
            # table counts as free.
            await self._caller.call(
                "put_item",
                TableName=self._state,
                Item=item,
                ConditionExpression=f"{_NOT_EXISTS} OR #x <= :now",
                ExpressionAttributeNames={**_PK, "#x": TTL_ATTRIBUTE},
                ExpressionAttributeValues={":now": codec.n(float(now))},
                estimated_wcu=1.0,
            )
        except ConditionFailed:
            return False
        return True

    async def settle_claim(
        self, key: str, state: str, ttl: float, *, detail: str | None = None
    ) -> None:
        validate_idempotency_key(key)
        item = {
            **codec.claim_key(hash_key(key)),
            TTL_ATTRIBUTE: codec.n(math.ceil(self._clock() + ttl)),
            "state": codec.s(state),
        }
        if detail is not None:
            item["detail"] = codec.s(detail[:MAX_CLAIM_DETAIL])
        await self._caller.call("put_item", TableName=self._state, Item=item, estimated_wcu=1.0)

    async def release_claim(self, key: str) -> None:
        validate_idempotency_key(key)
        await self._caller.call(
            "delete_item",
            TableName=self._state,
            Key=codec.claim_key(hash_key(key)),
            estimated_wcu=1.0,
        )

    async def get_claim(self, key: str) -> Claim | None:
        validate_idempotency_key(key)
        result = await self._caller.call(
            "get_item",
            TableName=self._state,
            Key=codec.claim_key(hash_key(key)),
            ConsistentRead=True,
        )
        item = result.get("Item")
        if not item:
            return None
        expires = float(item.get(TTL_ATTRIBUTE, {}).get("N", "0"))
        if expires <= self._clock():
            return None  # TTL deletion is lazy: a lapsed claim may still be in the table
        return Claim(
            codec.get_s(item, "state") or "started",
            expires,
            codec.get_s(item, "detail"),
        )


# A claim's detail carries a recorded answer for an idempotent replay (at most 64 000
# characters); the cap keeps one item well inside DynamoDB's 400 KB.
MAX_CLAIM_DETAIL = 100_000

_LEASE_NAMES = {"#h": "leaseHolder", "#e": "leaseExpires"}
