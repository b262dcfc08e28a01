"""DynamoDB Streams -> HooksFunction: the event source mapping of the events table.

The table's stream is read from its oldest record (`TRIM_HORIZON`), shard by shard, with the
template's filter, batch size and batching window. Each batch is a synchronous invoke of
HooksFunction with the record shape Lambda sends. `batchItemFailures` are honoured: the batch
is delivered again from the first failed record. A function error (or timeout) retries the
batch, halving it first when `BisectBatchOnFunctionError` is on, up to the mapping's
`MaximumRetryAttempts`; what still fails is kept in `dead_letters` (the hooks' failure
queue). Each batch counts its own retries: the halves of a split batch are new batches,
each with the mapping's whole `MaximumRetryAttempts` (a split is not a retry of theirs), and
no batch inherits what an earlier one used. Records of one shard are delivered in order,
one batch at a time.

Delivery is at least once: a record read from the stream stays in the poller's backlog until
its batch has been delivered (or kept as a dead letter), so an invocation that raises, is cut
or is cancelled halfway is delivered again on the next poll instead of being skipped by the
shard position that has already moved past it.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from agentkit.emulator.background import BackgroundLoop
from agentkit.emulator.chaos import Chaos
from agentkit.emulator.lambda_service import LambdaService
from agentkit.emulator.template import StreamMapping

log = logging.getLogger("agentkit.emulator.streams")

FUNCTION = "HooksFunction"


def matches(pattern: Any, value: Any) -> bool:
    """An EventBridge-style filter pattern (nested objects, lists of allowed values)."""
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            return False
        return all(k in value and matches(p, value[k]) for k, p in pattern.items())
    if isinstance(pattern, list):
        return value in pattern
    return bool(pattern == value)


def lambda_record(record: dict[str, Any], arn: str, region: str) -> dict[str, Any]:
    """A Streams API record as Lambda hands it over (JSON: numbers for times, base64 for
    binary attributes)."""
    out: dict[str, Any] = json.loads(json.dumps(record, default=_json_default))
    out.setdefault("eventSource", "aws:dynamodb")
    out.setdefault("awsRegion", region)
    out["eventSourceARN"] = arn
    return out


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime):
        return int(value.timestamp())
    return str(value)


class StreamPoller(BackgroundLoop):
    """Reads the events table's stream and feeds HooksFunction."""

    def __init__(
        self,
        streams_client: Callable[[], Any],
        dynamodb_client: Callable[[], Any],
        table: str,
        mapping: StreamMapping,
        lambdas: LambdaService,
        chaos: Chaos,
        *,
        region: str = "us-east-1",
        poll_interval: float = 0.25,
    ) -> None:
        self._streams = streams_client
        self._dynamodb = dynamodb_client
        self._table = table
        self._mapping = mapping
        self._lambdas = lambdas
        self._chaos = chaos
        self._region = region
        self._poll = poll_interval
        self.delivered_batches = 0
        self.dead_letters: list[dict[str, Any]] = []
        self.idle = asyncio.Event()
        self.caught_up_at = float("-inf")  # `time.monotonic()` when a read last found nothing

    async def _run(self) -> None:
        arn = await asyncio.to_thread(self._stream_arn)
        positions: dict[str, str | None] = {}  # shard -> last sequence number read
        backlog: list[dict[str, Any]] = []  # read and not yet delivered: kept on a failure
        while True:
            try:
                await self._poll_once(arn, positions, backlog)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading the events stream failed; trying again")
                await asyncio.sleep(1.0)

    def _stream_arn(self) -> str:
        table = self._dynamodb().describe_table(TableName=self._table)["Table"]
        return str(table["LatestStreamArn"])

    def _read(self, arn: str, positions: dict[str, str | None]) -> list[dict[str, Any]]:
        """New records of every shard, from a fresh iterator after the last sequence
        number each time (as a poller that restarts would)."""
        records: list[dict[str, Any]] = []
        for shard in self._shards(arn):
            last = positions.get(shard)
            kwargs: dict[str, Any] = {"StreamArn": arn, "ShardId": shard}
            if last is None:
                kwargs["ShardIteratorType"] = "TRIM_HORIZON"
            else:
                kwargs.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=last)
            iterator = self._streams().get_shard_iterator(**kwargs).get("ShardIterator")
            if not iterator:
                continue
            page = self._streams().get_records(
                ShardIterator=iterator, Limit=self._mapping.batch_size
            )
            got = page.get("Records", [])
            if got:
                positions[shard] = str(got[-1]["dynamodb"]["SequenceNumber"])
            records += [r for r in got if matches(self._filter, r)]
        return records

    async def _poll_once(
        self, arn: str, positions: dict[str, str | None], backlog: list[dict[str, Any]]
    ) -> None:
        """Deliver the backlog and what the stream has after it. A record leaves `backlog`
        only once its batch is delivered, so a poll that fails part-way redelivers it."""
        if not backlog:
            reading_from = time.monotonic()
            backlog += await asyncio.to_thread(self._read, arn, positions)
            if not backlog:
                # Everything written before this read began has been delivered.
                self.caught_up_at = reading_from
                self.idle.set()
                self._lambdas.activity.changed()
                await asyncio.sleep(self._poll)
                return
        self.idle.clear()
        loop = asyncio.get_running_loop()
        window_ends = loop.time() + self._mapping.batching_window
        size = self._mapping.batch_size
        # The batching window: gather more records until it closes or the batch is full.
        while len(backlog) < size and loop.time() < window_ends:
            await asyncio.sleep(min(self._poll, max(0.0, window_ends - loop.time())))
            backlog += await asyncio.to_thread(self._read, arn, positions)
        while backlog:
            batch = backlog[:size]
            await self._deliver(
                [lambda_record(r, arn, self._region) for r in batch], self._mapping.max_retries
            )
            del backlog[: len(batch)]

    @property
    def _filter(self) -> dict[str, Any]:
        return self._mapping.filter_pattern

    def _shards(self, arn: str) -> list[str]:
        described = self._streams().describe_stream(StreamArn=arn)["StreamDescription"]
        return [s["ShardId"] for s in described.get("Shards", [])]

    async def _deliver(self, records: list[dict[str, Any]], retries_left: int) -> None:
        """Deliver one batch until it succeeds, bisecting on function errors. `retries_left`
        is this batch's own: a retry of it (the whole, or what follows its first failed
        record) spends one, and each half of a split starts again from the mapping's."""
        while records:
            if self._chaos.roll("late", f"{FUNCTION} batch of {len(records)}"):
                await asyncio.sleep(self._chaos.uniform(0.5, 3.0))
            result = await self._lambdas.invoke(FUNCTION, {"Records": records})
            self.delivered_batches += 1
            if result.ok and self._chaos.roll("duplicate", f"{FUNCTION} batch of {len(records)}"):
                await self._lambdas.invoke(FUNCTION, {"Records": records})
            if result.ok:
                failed = _first_failure(result.payload, records)
                if failed is None:
                    return
                records = records[failed:]  # everything from the first failed record
            elif self._mapping.bisect_on_error and len(records) > 1 and retries_left > 0:
                half = len(records) // 2
                retries = self._mapping.max_retries
                await self._deliver(records[:half], retries)
                await self._deliver(records[half:], retries)
                return
            if retries_left <= 0:
                log.error("%s gave up on a batch of %d records", FUNCTION, len(records))
                self.dead_letters.append({"Records": records})
                return
            retries_left -= 1


def _first_failure(payload: Any, records: list[dict[str, Any]]) -> int | None:
    """The position of the first record a `batchItemFailures` response names, if any."""
    failures = (payload or {}).get("batchItemFailures") if isinstance(payload, dict) else None
    if not failures:
        return None
    failed = {str(f.get("itemIdentifier")) for f in failures if isinstance(f, dict)}
    for position, record in enumerate(records):
        if str(record.get("dynamodb", {}).get("SequenceNumber")) in failed:
            return position
    return 0  # an identifier Lambda cannot place: the whole batch is retried
