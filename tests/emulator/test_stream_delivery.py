"""The stream poller delivers every record at least once: a hook invocation that raises or
is cut part-way (as `--chaos timeout` cuts one) is delivered again, never skipped because
the shard position has already moved past it."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from agentkit.emulator.chaos import Chaos, ChaosSpec
from agentkit.emulator.functions import InvokeResult
from agentkit.emulator.lambda_service import LambdaService
from agentkit.emulator.streams import StreamPoller
from agentkit.emulator.template import StreamMapping

pytestmark = pytest.mark.timeout(30)

ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/events/stream/1"


def inserted(n: int) -> dict[str, Any]:
    return {
        "eventName": "INSERT",
        "dynamodb": {"SequenceNumber": str(100 + n), "NewImage": {"kind": {"S": "event"}}},
    }


class FakeStreams:
    """One shard holding `records`; an iterator is the position after which it reads."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records

    def describe_stream(self, **_: Any) -> dict[str, Any]:
        return {"StreamDescription": {"Shards": [{"ShardId": "shard-0"}]}}

    def get_shard_iterator(self, **kw: Any) -> dict[str, Any]:
        after = int(kw.get("SequenceNumber", 0))
        return {"ShardIterator": str(after)}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        after = int(ShardIterator)
        got = [r for r in self.records if int(r["dynamodb"]["SequenceNumber"]) > after]
        return {"Records": got[:Limit]}


class FakeDynamoDB:
    def describe_table(self, **_: Any) -> dict[str, Any]:
        return {"Table": {"LatestStreamArn": ARN}}


class CutOnce:
    """HooksFunction whose first invocation is cut (it raises, as a worker that dies in the
    middle of an answer may); every later one succeeds. Counts what each record saw."""

    def __init__(self, expected: int) -> None:
        self.calls = 0
        self.seen: dict[str, int] = {}
        self.expected = expected
        self.all_seen = asyncio.Event()

    async def invoke(self, function: str, event: Any, **_: Any) -> InvokeResult:
        self.calls += 1
        if self.calls == 1:
            raise ConnectionResetError("the invocation was cut")
        for record in event["Records"]:
            seq = record["dynamodb"]["SequenceNumber"]
            self.seen[seq] = self.seen.get(seq, 0) + 1
        if len(self.seen) == self.expected:
            self.all_seen.set()
        return InvokeResult(True, {"batchItemFailures": []})


async def test_a_cut_hook_invocation_is_delivered_again_not_skipped() -> None:
    records = [inserted(n) for n in range(1, 6)]
    hooks = CutOnce(expected=len(records))
    poller = StreamPoller(
        lambda: FakeStreams(records),
        FakeDynamoDB,
        "events",
        StreamMapping(batch_size=2, batching_window=0.0, max_retries=2),
        cast(LambdaService, hooks),
        Chaos(ChaosSpec(seed=7)),
        poll_interval=0.01,
    )
    poller.start()
    try:
        await asyncio.wait_for(hooks.all_seen.wait(), timeout=10)
    finally:
        await poller.aclose()
    # Every record reached the hooks, the ones of the cut batch included.
    assert sorted(hooks.seen) == [str(100 + n) for n in range(1, 6)]
    assert hooks.calls >= 4  # the cut batch was invoked again
