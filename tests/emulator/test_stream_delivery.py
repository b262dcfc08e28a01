"""The stream poller delivers every record at least once: a hook invocation that raises or
is cut part-way (as `--chaos timeout` cuts one) is delivered again, never skipped because
the shard position has already moved past it."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from agentkit.emulator.background import Activity
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
        self.activity = Activity()
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


class Poisoned:
    """HooksFunction that fails (a function error) on any batch holding the poison record,
    and on the first `flaky` invocations of a batch holding the flaky one; records the
    sequence numbers of every invocation's batch."""

    def __init__(self, poison: str, flaky: str, flaky_failures: int) -> None:
        self.activity = Activity()
        self.poison, self.flaky, self.flaky_left = poison, flaky, flaky_failures
        self.batches: list[list[str]] = []
        self.flaky_done = asyncio.Event()

    async def invoke(self, function: str, event: Any, **_: Any) -> InvokeResult:
        seqs = [r["dynamodb"]["SequenceNumber"] for r in event["Records"]]
        self.batches.append(seqs)
        if self.poison in seqs:
            return InvokeResult(False, error_type="Boom", error_message="poison")
        if self.flaky in seqs:
            if self.flaky_left > 0:
                self.flaky_left -= 1
                return InvokeResult(False, error_type="Boom", error_message="flaky")
            self.flaky_done.set()
        return InvokeResult(True, {"batchItemFailures": []})


async def test_each_batch_counts_its_own_retries() -> None:
    # Records 101-104 arrive first (one batch of 4, the poison among them); 105 is read by
    # a later poll, and fails as many times as the mapping retries before it succeeds.
    records = [inserted(n) for n in range(1, 5)]
    retries = 2
    hooks = Poisoned(poison="104", flaky="105", flaky_failures=retries)
    streams = FakeStreams(records)
    poller = StreamPoller(
        lambda: streams,
        FakeDynamoDB,
        "events",
        StreamMapping(batch_size=4, batching_window=0.0, max_retries=retries),
        cast(LambdaService, hooks),
        Chaos(ChaosSpec(seed=7)),
        poll_interval=0.01,
    )
    poller.start()
    try:
        # Idle: the first batch is done with (delivered or dead-lettered), nothing is left.
        await asyncio.wait_for(poller.idle.wait(), timeout=10)
        streams.records = [*records, inserted(5)]
        await asyncio.wait_for(hooks.flaky_done.wait(), timeout=10)
    finally:
        await poller.aclose()
    # The split halves of the failing batch each got the whole retry count: the poison
    # record alone was tried once and retried `retries` times, not fewer.
    assert hooks.batches[:3] == [["101", "102", "103", "104"], ["101", "102"], ["103", "104"]]
    assert hooks.batches.count(["104"]) == 1 + retries
    assert [r["dynamodb"]["SequenceNumber"] for r in poller.dead_letters[0]["Records"]] == ["104"]
    # The later batch inherited nothing of that: its `retries` failures were all retried.
    assert hooks.batches.count(["105"]) == 1 + retries
    assert len(poller.dead_letters) == 1
