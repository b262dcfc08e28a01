"""The emulator's parts on their own: the chaos spec, the botocore fault hook against a
real DynamoDB-API server, the template's function shapes, Scheduler's expressions, and the
stream mapping's filter and partial batch failures."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentkit.emulator.chaos import ChaosSpec, ChaosSpecError, install_dynamodb_faults
from agentkit.emulator.scheduler import cron_to_standard, next_occurrence
from agentkit.emulator.streams import _first_failure, matches
from agentkit.emulator.template import DEFAULT_SHAPE, read_template

REPO = Path(__file__).resolve().parents[2]


def test_chaos_spec_reads_rates_and_seed() -> None:
    spec = ChaosSpec.parse("duplicate=0.5,timeout=0.2,throttle=0.1,seed=7")
    assert (spec.duplicate, spec.timeout, spec.throttle, spec.seed) == (0.5, 0.2, 0.1, 7)
    assert spec.conflict == 0.1  # follows throttle unless given
    assert spec.late == 0.25  # half of duplicate unless given
    assert ChaosSpec.parse(spec.as_text()) == spec


@pytest.mark.parametrize("text", ["duplicate", "duplicate=2", "flood=0.1", "seed=x"])
def test_chaos_spec_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ChaosSpecError):
        ChaosSpec.parse(text)


def test_the_fault_hook_throttles_dynamodb_calls_beneath_botocore(dynamodb_endpoint: str) -> None:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import ClientError

    session = boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    install_dynamodb_faults(session.events, ChaosSpec(throttle=1.0, conflict=0.0), serial=1)
    client = session.client(
        "dynamodb",
        endpoint_url=dynamodb_endpoint,
        config=Config(retries={"mode": "standard", "max_attempts": 3}),
    )
    with pytest.raises(ClientError) as caught:
        client.list_tables()
    assert caught.value.response["Error"]["Code"] in (
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
    )
    assert caught.value.response["ResponseMetadata"]["RetryAttempts"] >= 2  # botocore retried


def test_a_cancelled_transaction_never_reaches_a_stream_reader(dynamodb_endpoint: str) -> None:
    """A reader that took its iterator before a transaction was cancelled sees neither the
    cancelled write nor a gap where the next real write lands (the hooks once missed the
    events written right after a conflicting follow-up)."""
    import uuid

    import boto3
    from botocore.exceptions import ClientError

    session = boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    dynamodb = session.client("dynamodb", endpoint_url=dynamodb_endpoint)
    streams = session.client("dynamodbstreams", endpoint_url=dynamodb_endpoint)
    table = f"stream-{uuid.uuid4().hex[:8]}"
    arn = dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )["TableDescription"]["LatestStreamArn"]
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]

    def iterator_after(sequence: str) -> str:
        return str(
            streams.get_shard_iterator(
                StreamArn=arn,
                ShardId=shard,
                ShardIteratorType="AFTER_SEQUENCE_NUMBER",
                SequenceNumber=sequence,
            )["ShardIterator"]
        )

    try:
        dynamodb.put_item(TableName=table, Item={"pk": {"S": "first"}})
        start = streams.get_shard_iterator(
            StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        last = streams.get_records(ShardIterator=start)["Records"][-1]["dynamodb"]
        held = iterator_after(last["SequenceNumber"])  # taken before the transaction
        with pytest.raises(ClientError):  # the put is applied, then the check cancels it
            dynamodb.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": table, "Item": {"pk": {"S": "cancelled"}}}},
                    {
                        "ConditionCheck": {
                            "TableName": table,
                            "Key": {"pk": {"S": "absent"}},
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                ]
            )
        dynamodb.put_item(TableName=table, Item={"pk": {"S": "after"}})
        seen = []
        records = streams.get_records(ShardIterator=held)["Records"]
        while records:  # as the stream poller reads: from after the last record it got
            seen += [r["dynamodb"]["Keys"]["pk"]["S"] for r in records]
            sequence = records[-1]["dynamodb"]["SequenceNumber"]
            records = streams.get_records(ShardIterator=iterator_after(sequence))["Records"]
        assert seen == ["after"]
    finally:
        dynamodb.delete_table(TableName=table)


def test_a_cancelled_transaction_leaves_every_item_as_it_was(dynamodb_endpoint: str) -> None:
    """The server backs up only the items a transaction names: once it is cancelled, an
    updated item has its old attributes, a put item is gone, a deleted one is back."""
    from botocore.exceptions import ClientError

    dynamodb, table = keyed_table(dynamodb_endpoint, "rollback")

    def key(sk: int) -> dict[str, Any]:
        return {"pk": {"S": "s"}, "sk": {"N": str(sk)}}

    try:
        dynamodb.put_item(TableName=table, Item={**key(0), "v": {"S": "kept"}})
        dynamodb.put_item(TableName=table, Item={**key(1), "v": {"S": "doomed"}})
        with pytest.raises(ClientError) as caught:
            dynamodb.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": table,
                            "Key": key(0),
                            "UpdateExpression": "SET v = :v",
                            "ExpressionAttributeValues": {":v": {"S": "changed"}},
                        }
                    },
                    {"Delete": {"TableName": table, "Key": key(1)}},
                    {"Put": {"TableName": table, "Item": {**key(2), "v": {"S": "new"}}}},
                    {
                        "ConditionCheck": {
                            "TableName": table,
                            "Key": key(9),
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                ]
            )
        assert caught.value.response["Error"]["Code"] == "TransactionCanceledException"
        items = dynamodb.query(
            TableName=table,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "s"}},
        )["Items"]
        assert [(i["sk"]["N"], i["v"]["S"]) for i in items] == [("0", "kept"), ("1", "doomed")]
    finally:
        dynamodb.delete_table(TableName=table)


def test_function_shapes_are_the_templates() -> None:
    shape = read_template(REPO / "template.yaml")
    assert shape == DEFAULT_SHAPE
    turn = shape.function("TurnFunction")
    assert (turn.timeout, turn.max_retries, turn.max_event_age) == (900, 2, 3600)
    assert shape.stream.batch_size == 100
    assert shape.stream.filter_pattern["eventName"] == ["INSERT"]


def test_eventbridge_cron_is_read_with_sunday_as_one() -> None:
    assert cron_to_standard("0 9 ? * 2-6 *") == "0 9 * * 1-5"
    monday = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
    assert next_occurrence("cron(0 9 ? * 2-6 *)", monday) == datetime(
        2026, 11, 30, 9, 0, tzinfo=UTC
    )


def test_at_fires_once_and_rate_counts_from_its_start() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    at = "at(2026-01-01T00:00:05)"
    assert next_occurrence(at, start) == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert next_occurrence(at, datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)) is None
    later = datetime(2026, 1, 1, 0, 7, tzinfo=UTC)
    assert next_occurrence("rate(5 minutes)", later, start) == datetime(
        2026, 1, 1, 0, 10, tzinfo=UTC
    )


def test_the_stream_filter_passes_inserted_events_only() -> None:
    pattern = DEFAULT_SHAPE.stream.filter_pattern
    event = {"eventName": "INSERT", "dynamodb": {"NewImage": {"kind": {"S": "event"}}}}
    chunk = {"eventName": "INSERT", "dynamodb": {"NewImage": {"kind": {"S": "chunk"}}}}
    removed = {"eventName": "REMOVE", "dynamodb": {}}
    assert [matches(pattern, r) for r in (event, chunk, removed)] == [True, False, False]


def test_a_partial_batch_failure_is_redelivered_from_the_first_failed_record() -> None:
    records = [{"dynamodb": {"SequenceNumber": str(n)}} for n in (10, 11, 12)]
    answer = {"batchItemFailures": [{"itemIdentifier": "11"}, {"itemIdentifier": "12"}]}
    assert _first_failure(answer, records) == 1
    assert _first_failure({"batchItemFailures": []}, records) is None


def test_a_table_query_reads_its_partition_in_range_order_and_pages(
    dynamodb_endpoint: str,
) -> None:
    """The server hands moto's query only the partition it names: ranges, both orders,
    limits and paging still answer as DynamoDB does, with other partitions around."""

    dynamodb, table = keyed_table(dynamodb_endpoint, "query")

    def query(**extra: Any) -> tuple[list[int], Any]:
        page = dynamodb.query(
            TableName=table,
            KeyConditionExpression="pk = :p AND sk >= :from",
            ExpressionAttributeValues={":p": {"S": "b"}, ":from": {"N": "5"}},
            ConsistentRead=True,
            **extra,
        )
        return [int(i["sk"]["N"]) for i in page["Items"]], page.get("LastEvaluatedKey")

    try:
        for pk in ("a", "b", "c"):
            for n in (11, 3, 7, 5, 9, 1):  # written out of order
                dynamodb.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"N": str(n)}})

        assert query() == ([5, 7, 9, 11], None)
        assert query(ScanIndexForward=False, Limit=1)[0] == [11]
        first, cursor = query(Limit=2)
        assert first == [5, 7] and cursor == {"pk": {"S": "b"}, "sk": {"N": "7"}}
        assert query(ExclusiveStartKey=cursor) == ([9, 11], None)
    finally:
        dynamodb.delete_table(TableName=table)


def test_a_table_query_keeps_its_range_order_as_items_are_overwritten_and_deleted(
    dynamodb_endpoint: str,
) -> None:
    """The partition's ordered keys follow every write: an overwrite keeps one key, a
    delete (plain or in a transaction) drops it, a cancelled transaction leaves it."""

    dynamodb, table = keyed_table(dynamodb_endpoint, "order")

    def keys(condition: str, **values: int) -> list[int]:
        page = dynamodb.query(
            TableName=table,
            KeyConditionExpression=f"pk = :p AND {condition}",
            ExpressionAttributeValues={
                ":p": {"S": "a"},
                **{f":{name}": {"N": str(n)} for name, n in values.items()},
            },
            ConsistentRead=True,
        )
        return [int(i["sk"]["N"]) for i in page["Items"]]

    def key(n: int) -> dict[str, Any]:
        return {"pk": {"S": "a"}, "sk": {"N": str(n)}}

    try:
        for n in (4, 2, 8, 6, 10):
            dynamodb.put_item(TableName=table, Item=key(n))
        dynamodb.put_item(TableName=table, Item={**key(6), "v": {"S": "again"}})
        dynamodb.delete_item(TableName=table, Key=key(4))
        dynamodb.transact_write_items(
            TransactItems=[
                {"Delete": {"TableName": table, "Key": key(8)}},
                {"Put": {"TableName": table, "Item": key(7)}},
            ]
        )
        with pytest.raises(dynamodb.exceptions.TransactionCanceledException):
            dynamodb.transact_write_items(
                TransactItems=[
                    {"Delete": {"TableName": table, "Key": key(2)}},
                    {
                        "Put": {
                            "TableName": table,
                            "Item": key(10),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                ]
            )

        assert keys("sk BETWEEN :low AND :high", low=2, high=10) == [2, 6, 7, 10]
        assert keys("sk < :high", high=7) == [2, 6]
        assert keys("sk > :low", low=6) == [7, 10]
        assert keys("sk = :at", at=8) == []
        assert keys("sk <= :high", high=6) == [2, 6]
    finally:
        dynamodb.delete_table(TableName=table)


def keyed_table(endpoint: str, prefix: str) -> tuple[Any, str]:
    """A client of the server and a new table keyed (pk S, sk N), named from `prefix`."""
    import uuid

    import boto3

    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    table = f"{prefix}-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return dynamodb, table
