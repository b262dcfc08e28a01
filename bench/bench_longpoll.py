"""Streaming latency through the Lambda long-poll path: how long after an event is appended
a client following `GET /v1/session/{id}/stream` through ApiFunction has it.

ApiFunction's real handler (Mangum, HTTP API payload 2.0 events) runs in this process
against a moto DynamoDB server on loopback. The client loop invokes it with stream events,
each from the last index it saw plus one, as the agentkit clients do. Meanwhile a writer
thread, with a store of its own (another function's, as TurnFunction's would be), appends
one event at a time at random intervals. Each event is timed from the moment its append
started to the moment the handler returned a response holding it. Prints p50 and p95
beside the goal (p95 <= 300 ms), and the DynamoDB reads the waiting cost. Nothing is
asserted. Real API Gateway and Lambda add their own round trip (tens of milliseconds)
on top of what is measured here.

    python bench/bench_longpoll.py [--events 60] [--gap-ms 50:2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GOAL_P95_MS = 300.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def read_requests(usage: Any) -> int:
    """The read requests a store has made (queries and item reads)."""
    return sum(n for op, n in usage.per_operation.items() if op in ("query", "get_item"))


def stream_event(session_id: str, start: int) -> dict[str, Any]:
    """The sample stream request (events/api/stream.json), aimed at `session_id`."""
    from tests.aws.conftest import load_event

    event = load_event("api/stream.json")
    path = f"/v1/session/{session_id}/stream"
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["rawQueryString"] = f"startIndex={start}"
    event["queryStringParameters"] = {"startIndex": str(start)}
    return event


class Writer(threading.Thread):
    """Appends `count` events to the session, one at a time, `gap` seconds apart (random),
    and notes when each append started, by index."""

    def __init__(
        self, store: Any, session_id: str, first: int, count: int, gap: tuple[float, float]
    ) -> None:
        super().__init__(daemon=True)
        self.store = store
        self.first = first  # the index the first append gets (the only writer)
        self.session_id = session_id
        self.count = count
        self.gap = gap
        self.started: dict[int, float] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._append_all())
        except BaseException as exc:  # reported by the main thread
            self.error = exc

    async def _append_all(self) -> None:
        from agentkit.events import EventDraft

        rng = random.Random(19)
        for n in range(self.count):
            await asyncio.sleep(rng.uniform(*self.gap))
            draft = EventDraft(type="message.appended", data={"text": f"chunk {n} "})
            # Noted before the call: the reader may see the event before append returns.
            self.started[self.first + n] = time.perf_counter()
            (event,) = await self.store.append(self.session_id, [draft])
            if event.index != self.first + n:
                raise RuntimeError(f"appended at {event.index}, expected {self.first + n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=60)
    # From a streaming reply's pace to a model thinking for seconds between events.
    parser.add_argument("--gap-ms", default="50:2000", help="random pause between appends")
    args = parser.parse_args()
    low, high = (float(x) / 1000 for x in args.gap_ms.split(":"))

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    from agentkit.aws.clients import client as make_client
    from agentkit.aws.handlers import _common, api
    from agentkit.aws.host import AwsHost
    from agentkit.aws.settings import AwsSettings
    from agentkit.project.build import build_project
    from agentkit.store.dynamodb import DynamoDBSettings, DynamoDBStore, create_tables
    from tests.aws.conftest import (
        TOKEN,
        CapturingDispatcher,
        FakeContext,
        load_event,
        write_agent,
    )
    from tests.fixtures.dynamodb import start_moto_server, stop_moto_server

    url, proc = start_moto_server()
    try:
        with tempfile.TemporaryDirectory() as raw:
            tmp = Path(raw)
            build_project(write_agent(tmp / "project"), tmp / "build")
            suffix = uuid.uuid4().hex[:8]
            settings = AwsSettings(
                sessions_table=f"lp{suffix}-s",
                events_table=f"lp{suffix}-e",
                dynamodb_endpoint=url,
                endpoint_url=url,
                bearer_token=TOKEN,
                build_dir=tmp / "build",
            )
            ddb_settings = DynamoDBSettings(
                endpoint_url=url,
                sessions_table=settings.sessions_table,
                events_table=settings.events_table,
            )
            create_tables(make_client("dynamodb", settings), ddb_settings)
            host = AwsHost(settings, dispatcher=CapturingDispatcher())
            _common.use_host(host)
            api.reset()

            created = api.handler(load_event("api/create-session.json"), FakeContext())
            assert created["statusCode"] == 200, created
            session_id = json.loads(created["body"])["sessionId"]
            history = asyncio.run(DynamoDBStore(ddb_settings).read(session_id))
            next_index = history[-1].index + 1

            writer = Writer(
                DynamoDBStore(ddb_settings), session_id, next_index, args.events, (low, high)
            )
            lags: list[float] = []
            responses = 0
            reads_before = read_requests(host.store.usage)
            begun = time.perf_counter()
            writer.start()
            while len(lags) < args.events and writer.error is None:
                answer = api.handler(stream_event(session_id, next_index), FakeContext())
                arrived = time.perf_counter()
                responses += 1
                assert answer["statusCode"] == 200, answer
                for line in answer["body"].splitlines():
                    if not line:
                        continue
                    index = json.loads(line)["index"]
                    lags.append(arrived - writer.started[index])
                    next_index = index + 1
            elapsed = time.perf_counter() - begun
            writer.join(timeout=30)
            if writer.error is not None:
                raise SystemExit(f"writer failed: {writer.error!r}")
            reads = read_requests(host.store.usage) - reads_before
    finally:
        _common.use_host(None)
        stop_moto_server(proc)

    poll = host.store._poll
    print("long-poll stream latency (ApiFunction handler + moto DynamoDB, append -> response)")
    print(f"  events               : {len(lags)} over {responses} stream responses")
    print(f"  appends              : one every {low * 1000:.0f}-{high * 1000:.0f} ms (random)")
    print(
        f"  store poll           : {poll[0] * 1000:.0f} ms, backing off to {poll[1] * 1000:.0f} ms"
    )
    print(f"  p50                  : {pct(lags, 50) * 1000:7.1f} ms")
    print(
        f"  p95                  : {pct(lags, 95) * 1000:7.1f} ms  (goal <= {GOAL_P95_MS:.0f} ms)"
    )
    print(f"  max                  : {max(lags) * 1000:7.1f} ms")
    print(
        f"  DynamoDB reads       : {reads} in {elapsed:.1f} s = {reads / elapsed:.1f}/s for one"
        " following client"
    )
    print(
        "                         (strongly consistent; 1 read unit each while the page is"
        " under 4 KB)"
    )


if __name__ == "__main__":
    main()
