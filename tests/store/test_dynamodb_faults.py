"""DynamoDB failures the moto server never produces, injected into the store's own client
(see tests/fixtures/botocore_faults.py): throttling, a partial batch, a transaction
conflict. The store must ride over the passing ones without losing or doubling a write,
and turn the lasting ones into a `StoreError`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentkit.errors import StoreError
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.dynamodb import DynamoDBSettings, DynamoDBStore, make_client
from tests.fixtures.botocore_faults import Faults
from tests.store.test_dynamodb import event_items, new_session, note

Factory = Callable[..., DynamoDBStore]
CONFLICT = {
    "CancellationReasons": [
        {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
    ]
}


@pytest.fixture
def faulty(
    dynamodb_store_factory: Factory, dynamodb_endpoint: str
) -> Iterator[Callable[..., tuple[DynamoDBStore, Faults]]]:
    """A store on fresh tables whose client can be told to fail (`max_attempts` retries)."""
    clients: list[Any] = []

    def make(max_attempts: int = 5) -> tuple[DynamoDBStore, Faults]:
        tables = dynamodb_store_factory().settings
        client = make_client(
            DynamoDBSettings(endpoint_url=dynamodb_endpoint, region="us-east-1"),
            max_attempts=max_attempts,
        )
        clients.append(client)
        return DynamoDBStore(tables, client=client), Faults(client)

    yield make
    for client in clients:
        client.close()


async def test_a_throttled_append_is_retried_and_written_once(faulty: Any) -> None:
    store, faults = faulty()
    record = await new_session(store)
    faults.sent.clear()
    faults.error("PutItem", "ProvisionedThroughputExceededException", times=2)

    (event,) = await store.append(record.id, [note("after the throttle")])

    assert faults.injected["PutItem"] == 2
    assert faults.sent["PutItem"] == 3  # botocore's retries, then the real write
    assert event.index == 0
    assert [e.data["text"] for e in await store.read(record.id)] == ["after the throttle"]


async def test_a_throttle_that_outlasts_the_retries_is_a_store_error(
    faulty: Any, dynamodb_client: Any
) -> None:
    store, faults = faulty(max_attempts=2)  # botocore: two retries, three requests in all
    record = await new_session(store)
    faults.sent.clear()
    faults.error("PutItem", "ThrottlingException", times=3)

    with pytest.raises(StoreError, match="throttled"):
        await store.append(record.id, [note("never written")])

    assert faults.sent["PutItem"] == 3
    assert event_items(dynamodb_client, store, record.id) == []
    # the next append, throttle gone, takes index 0: nothing half-written is in the way
    (event,) = await store.append(record.id, [note("later")])
    assert event.index == 0


async def test_a_conflicting_transaction_is_retried_and_lands_whole(faulty: Any) -> None:
    store, faults = faulty()
    record = await new_session(store)
    await store.append(record.id, [note("a")])
    faults.error("TransactWriteItems", "TransactionCanceledException", times=2, **CONFLICT)

    batch = await store.append(record.id, [note("b1"), note("b2"), note("b3")])

    assert faults.injected["TransactWriteItems"] == 2
    assert faults.sent["TransactWriteItems"] == 3
    assert [e.index for e in batch] == [1, 2, 3]
    events = await store.read(record.id)
    assert [e.data["text"] for e in events] == ["a", "b1", "b2", "b3"]


async def test_a_conflict_creating_a_keyed_session_is_retried(faulty: Any) -> None:
    store, faults = faulty()
    record = SessionRecord(
        id=new_session_id(), channel_id="slack", continuation_key="T1:C1:1700000000.0001"
    )
    faults.error("TransactWriteItems", "TransactionCanceledException", times=1, **CONFLICT)

    await store.create_session(record)

    assert faults.sent["TransactWriteItems"] == 2
    found = await store.find_session("slack", "T1:C1:1700000000.0001")
    assert found is not None and found.id == record.id


async def test_unprocessed_deletes_are_sent_again_until_done(
    faulty: Any, dynamodb_client: Any
) -> None:
    store, faults = faulty()
    record = await new_session(store)
    await store.append(record.id, [note(str(i)) for i in range(30)])

    def none_processed(request: Any) -> tuple[int, dict[str, Any]]:
        # DynamoDB may hand back any part of a batch; here all of it, unwritten.
        return 200, {"UnprocessedItems": json.loads(request.body)["RequestItems"]}

    faults.reply("BatchWriteItem", none_processed, none_processed)

    assert await store.delete_session(record.id) is True

    assert faults.injected["BatchWriteItem"] == 2
    # two batches (25 + 6 writes); the first was handed back twice, so sent three times
    assert faults.sent["BatchWriteItem"] == 4
    assert await store.get_session(record.id) is None
    items = event_items(dynamodb_client, store, record.id)
    # every event became a deletion stub, plus the fence: no write was left unprocessed
    assert [item["kind"]["S"] for item in items] == ["deleted"] * 31
