"""The two DynamoDB tables of the store: settings, key schema constants and `create_tables`.

Importing this module has no side effects and imports no AWS SDK, so the SAM template
generator and `AwsHost` can reuse the constants. The design itself is described at the
top of `agentkit.store.dynamodb`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

# -- the events table: one item per event, keyed by (sessionId, index), streamed ----------
EVENTS_PARTITION_KEY = "sessionId"
EVENTS_SORT_KEY = "index"
EVENTS_KEY_SCHEMA: list[dict[str, str]] = [
    {"AttributeName": EVENTS_PARTITION_KEY, "KeyType": "HASH"},
    {"AttributeName": EVENTS_SORT_KEY, "KeyType": "RANGE"},
]
EVENTS_ATTRIBUTE_DEFINITIONS: list[dict[str, str]] = [
    {"AttributeName": EVENTS_PARTITION_KEY, "AttributeType": "S"},
    {"AttributeName": EVENTS_SORT_KEY, "AttributeType": "N"},
]
EVENTS_STREAM_VIEW_TYPE = "NEW_IMAGE"

# Items of the events table carry `kind`: "event" (a real event), "chunk" (a piece of an
# event too large for one item) or "deleted" (a deleted session's fence and stubs). A stream
# consumer wants only newly inserted events; this is the Lambda event-source filter for it.
KIND_ATTRIBUTE = "kind"
KIND_EVENT = "event"
KIND_CHUNK = "chunk"
KIND_DELETED = "deleted"
EVENTS_STREAM_FILTER_PATTERN = json.dumps(
    {"eventName": ["INSERT"], "dynamodb": {"NewImage": {KIND_ATTRIBUTE: {"S": [KIND_EVENT]}}}},
    separators=(",", ":"),
)

# -- the state table: sessions, continuation keys, leases, reminders, idempotency ----------
STATE_PARTITION_KEY = "pk"
STATE_SORT_KEY = "sk"
STATE_KEY_SCHEMA: list[dict[str, str]] = [
    {"AttributeName": STATE_PARTITION_KEY, "KeyType": "HASH"},
    {"AttributeName": STATE_SORT_KEY, "KeyType": "RANGE"},
]
# Listing newest first: both indexes sort by `listSort` = "<createdAt>#<sessionId>".
PRINCIPAL_INDEX = "byPrincipal"  # partition: the owning principal (sparse: none, no entry)
ALL_SESSIONS_INDEX = "allSessions"  # partition: the constant "session" (dev-mode listing)
PRINCIPAL_ATTRIBUTE = "principal"
LIST_ALL_ATTRIBUTE = "listAll"
LIST_SORT_ATTRIBUTE = "listSort"
STATE_ATTRIBUTE_DEFINITIONS: list[dict[str, str]] = [
    {"AttributeName": STATE_PARTITION_KEY, "AttributeType": "S"},
    {"AttributeName": STATE_SORT_KEY, "AttributeType": "S"},
    {"AttributeName": PRINCIPAL_ATTRIBUTE, "AttributeType": "S"},
    {"AttributeName": LIST_ALL_ATTRIBUTE, "AttributeType": "S"},
    {"AttributeName": LIST_SORT_ATTRIBUTE, "AttributeType": "S"},
]
# Only the record's own attributes are projected, so lease and interrupt updates on the
# session item never write to the indexes.
SESSION_RECORD_ATTRIBUTES: list[str] = [
    "sessionId",
    "owner",
    "channelId",
    "mode",
    "tokenHash",
    "continuationKey",
    "createdAt",
    "updatedAt",
    "metadata",
]
_PROJECTION: dict[str, Any] = {
    "ProjectionType": "INCLUDE",
    "NonKeyAttributes": SESSION_RECORD_ATTRIBUTES,
}
STATE_GLOBAL_SECONDARY_INDEXES: list[dict[str, Any]] = [
    {
        "IndexName": PRINCIPAL_INDEX,
        "KeySchema": [
            {"AttributeName": PRINCIPAL_ATTRIBUTE, "KeyType": "HASH"},
            {"AttributeName": LIST_SORT_ATTRIBUTE, "KeyType": "RANGE"},
        ],
        "Projection": _PROJECTION,
    },
    {
        "IndexName": ALL_SESSIONS_INDEX,
        "KeySchema": [
            {"AttributeName": LIST_ALL_ATTRIBUTE, "KeyType": "HASH"},
            {"AttributeName": LIST_SORT_ATTRIBUTE, "KeyType": "RANGE"},
        ],
        "Projection": _PROJECTION,
    },
]
# Epoch seconds; DynamoDB TTL deletes expired items lazily (within days), so readers also
# compare it with the clock. Enabled on both tables.
TTL_ATTRIBUTE = "expiresAt"

DEFAULT_SESSIONS_TABLE = "agentkit-sessions"
DEFAULT_EVENTS_TABLE = "agentkit-events"
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True, slots=True)
class DynamoDBSettings:
    """Where the store's tables live. `endpoint_url=None` means the real AWS endpoint."""

    endpoint_url: str | None = None
    region: str = DEFAULT_REGION
    sessions_table: str = DEFAULT_SESSIONS_TABLE
    events_table: str = DEFAULT_EVENTS_TABLE

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> DynamoDBSettings:
        """Read `AGENTKIT_DYNAMODB_ENDPOINT`, `AWS_REGION` (or `AWS_DEFAULT_REGION`),
        `AGENTKIT_SESSIONS_TABLE` and `AGENTKIT_EVENTS_TABLE`; unset ones keep defaults."""
        source = os.environ if env is None else env
        return cls(
            endpoint_url=source.get("AGENTKIT_DYNAMODB_ENDPOINT") or None,
            region=source.get("AWS_REGION") or source.get("AWS_DEFAULT_REGION") or DEFAULT_REGION,
            sessions_table=source.get("AGENTKIT_SESSIONS_TABLE") or DEFAULT_SESSIONS_TABLE,
            events_table=source.get("AGENTKIT_EVENTS_TABLE") or DEFAULT_EVENTS_TABLE,
        )


def sessions_table_definition(name: str) -> dict[str, Any]:
    """`CreateTable` arguments of the state table (on-demand billing)."""
    return {
        "TableName": name,
        "KeySchema": STATE_KEY_SCHEMA,
        "AttributeDefinitions": STATE_ATTRIBUTE_DEFINITIONS,
        "GlobalSecondaryIndexes": STATE_GLOBAL_SECONDARY_INDEXES,
        "BillingMode": "PAY_PER_REQUEST",
    }


def events_table_definition(name: str) -> dict[str, Any]:
    """`CreateTable` arguments of the events table (on-demand billing, NEW_IMAGE stream)."""
    return {
        "TableName": name,
        "KeySchema": EVENTS_KEY_SCHEMA,
        "AttributeDefinitions": EVENTS_ATTRIBUTE_DEFINITIONS,
        "BillingMode": "PAY_PER_REQUEST",
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": EVENTS_STREAM_VIEW_TYPE},
    }


def create_tables(client: Any, settings: DynamoDBSettings) -> None:
    """Create both tables (and turn TTL on) as the SAM template declares them.

    `client` is a boto3 DynamoDB client. Tables that already exist are left alone, so this
    is safe to run against a local server on every start. Failures raise `StoreError`.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    from agentkit.store._dynamo_calls import translate

    try:
        for definition in (
            sessions_table_definition(settings.sessions_table),
            events_table_definition(settings.events_table),
        ):
            _create_table(client, definition)
    except (BotoCoreError, ClientError) as exc:
        raise translate(exc, "create_tables") from exc


def _create_table(client: Any, definition: dict[str, Any]) -> None:
    from botocore.exceptions import ClientError

    name = definition["TableName"]
    try:
        client.create_table(**definition)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ResourceInUseException":
            raise
    client.get_waiter("table_exists").wait(
        TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120}
    )
    ttl = client.describe_time_to_live(TableName=name).get("TimeToLiveDescription", {})
    if ttl.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
        client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
        )
