"""Store round trips of one standard turn on DynamoDB, and what turns cost on AWS.

It starts a local moto server. The turn is the one of bench_turn.py: the zero-latency model
asks for one tool call, then answers. The message is accepted first (`start_session`, the
API function's work); then `run_turn` runs (the turn function's), from `message.received`
to `turn.completed`, and every request it sends is counted by operation, with the capacity
units moto reports. The engine awaits its store calls one after another, so the request
count is also the number of sequential round trips. The expected latency on real DynamoDB
is estimated from published figures (single-digit milliseconds per request; a transaction
about twice a plain write).

The cost section prices, from the measured request counts, capacity units and durations,
at the list prices in `aws_prices.py` (source and date there):
- 1,000 one-tool turns, each accepted by the API function, run by the turn function and
  read back once by the client (a `GET .../stream` through the API function);
- the same with a 32 KB tool result;
- a 100-turn session replayed once from its first event.
Capacity units are sized from the items themselves (`dynamo_meter.py`: moto does not size
them). A Lambda duration is our own compute measured here, plus real DynamoDB's latency
(a mid estimate of the published figures) for each request in place of moto's, at the
template's memory size; it leaves out the model's own latency, which a turn function also
pays for while it waits, so that is priced on its own line. Nothing is asserted; the goals (issue
19) are printed beside the numbers.

    python bench/bench_dynamo_turn.py [--turns 5] [--replay-turns 100]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aws_prices as price
from bench_turn import ZeroLatency, ours_project, setup_ours
from dynamo_meter import Meter

GOAL_SEQUENTIAL = 6
GOAL_WRITES = 10
WRITES = {"put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item"}
PLAIN_MS, TRANSACTION_MS = (3.0, 8.0), (6.0, 16.0)  # per request, low and high estimates
LARGE_RESULT = 32 * 1024
ROOT = Path(__file__).resolve().parent.parent


def template_memory_gb() -> float:
    """The functions' memory size, read from the template's Globals (MiB -> GB)."""
    text = (ROOT / "template.yaml").read_text()
    found = re.search(r"^Globals:.*?^\s+MemorySize:\s*(\d+)", text, re.S | re.M)
    return (int(found.group(1)) if found else 1024) / 1024


@dataclass
class Work:
    """What one kind of invocation did, summed over the measured turns."""

    requests: int = 0
    transactions: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    seconds: float = 0.0  # wall time against moto on loopback
    store_seconds: float = 0.0  # of which waiting on moto
    per_operation: dict[str, int] = field(default_factory=dict)

    def add(self, usage: Any, meter: Meter, seconds: float) -> None:
        self.requests += usage.request_count
        self.transactions += meter.transactions
        self.read_units += meter.read_units
        self.write_units += meter.write_units
        self.seconds += seconds
        self.store_seconds += meter.store_seconds
        for op, n in usage.per_operation.items():
            self.per_operation[op] = self.per_operation.get(op, 0) + n

    def lambda_seconds(self) -> float:
        """Duration on Lambda: our own compute, plus real DynamoDB's latency (mid estimate)
        for each request instead of moto's."""
        plain = self.requests - self.transactions
        store = plain * sum(PLAIN_MS) / 2 + self.transactions * sum(TRANSACTION_MS) / 2
        return max(0.0, self.seconds - self.store_seconds) + store / 1000


@dataclass
class Scenario:
    turns: int
    accept: Work = field(default_factory=Work)
    turn: Work = field(default_factory=Work)
    read_back: Work = field(default_factory=Work)
    critical: int = 0  # requests until `turn.completed` was recorded, summed


def write_tool(project: Path, result_bytes: int) -> None:
    """The bench project's tool, returning a padded report when `result_bytes` > 0."""
    pad = f', "report": "x" * {result_bytes}' if result_bytes else ""
    (project / "agent" / "tools" / "get_weather.py").write_text(
        textwrap.dedent(
            f"""
            from pydantic import BaseModel
            from agentkit import define_tool

            class WeatherInput(BaseModel):
                city: str

            @define_tool(description="Get the weather for a city.")
            async def get_weather(input: WeatherInput, ctx) -> dict:
                return {{"city": input.city, "tempC": 21{pad}}}
            """
        )
    )


class Rig:
    """A runtime over a fresh pair of DynamoDB tables, with turns held for `run_turn`."""

    def __init__(self, project: Path, url: str, name: str, state: Path) -> None:
        from agentkit.engine.runtime import AgentRuntime
        from agentkit.project.bundle import AgentBundle
        from agentkit.store.dynamodb import (
            DynamoDBSettings,
            DynamoDBStore,
            create_tables,
            make_client,
        )

        settings = DynamoDBSettings(url, "us-east-1", f"{name}-sessions", f"{name}-events")
        client = make_client(settings)
        create_tables(client, settings)
        self.meter = Meter()
        self.meter.attach(client)
        self.store = DynamoDBStore(settings, client=client)
        # Clients read through ApiFunction, not the TurnFunction that wrote: a store of its
        # own, which has read nothing of the session (the store keeps what it has read).
        self.reader = lambda: DynamoDBStore(settings, client=client)
        self.queued: list[tuple[str, str]] = []
        queued = self.queued

        class Hold:
            async def dispatch(self, session_id: str, turn_id: str) -> None:
                queued.append((session_id, turn_id))

        model = ZeroLatency()
        self.runtime = AgentRuntime(
            AgentBundle.discover(project),
            self.store,
            dispatcher=Hold(),
            model_resolver=lambda _id: model,
            state_root=state,
        )
        # Requests until the append that records `turn.completed` has returned: the
        # user's critical path (releasing the lease and checking the queue come after).
        self.marks: list[int] = []
        plain_append = self.store.append
        store, marks = self.store, self.marks

        async def append(session_id: str, drafts: Any, **kw: Any) -> Any:
            done = await plain_append(session_id, drafts, **kw)
            if any(d.type == "turn.completed" for d in drafts):
                marks.append(store.usage.request_count)
            return done

        self.store.append = append  # type: ignore[method-assign]

    async def timed(self, work: Work, call: Any, store: Any = None) -> Any:
        """Run `call`, adding to `work` what it cost `store` (the turns' store by default)."""
        store = self.store if store is None else store
        store.usage.reset()
        self.meter.reset()
        began = time.perf_counter()
        result = await call
        work.add(store.usage, self.meter, time.perf_counter() - began)
        return result


async def one_tool_turns(rig: Rig, turns: int) -> Scenario:
    from agentkit.sessions import Principal

    out = Scenario(turns)
    for _ in range(turns):
        await rig.timed(
            out.accept, rig.runtime.start_session("Weather in Paris?", principal=Principal("b"))
        )
        session_id, turn_id = rig.queued.pop()
        await rig.timed(out.turn, rig.runtime.run_turn(session_id, turn_id))
        assert rig.marks, "the turn did not complete"
        out.critical += rig.marks.pop()
        reader = rig.reader()
        await rig.timed(out.read_back, reader.read(session_id, 0), reader)
    return out


async def replayed_session(rig: Rig, turns: int) -> tuple[Work, int, int]:
    """A session of `turns` one-tool turns, then one read of its whole stream."""
    from agentkit.sessions import Principal

    alice = Principal("b")
    accepted = await rig.runtime.start_session("Weather in Paris?", principal=alice)
    token = accepted.continuation_token
    for n in range(turns):
        session_id, turn_id = rig.queued.pop()
        await rig.runtime.run_turn(session_id, turn_id)
        if n + 1 < turns:
            accepted = await rig.runtime.follow_up(
                session_id, token, "And tomorrow?", principal=alice
            )
            token = accepted.continuation_token
    work = Work()
    reader = rig.reader()
    events = await rig.timed(work, reader.read(accepted.session_id, 0), reader)
    size = sum(len(msgspec.json.encode(e)) for e in events)
    return work, len(events), size


def dollars(x: float) -> str:
    if x < 0.01:
        return f"${x:.6f}"
    return f"${x:,.4f}" if x < 1 else f"${x:,.2f}"


def print_round_trips(s: Scenario) -> None:
    n = s.turns
    print(f"one-tool turn on DynamoDB (moto), run_turn only, mean of {n} turns")
    print("requests by operation (the whole of run_turn):")
    for op, count in sorted(s.turn.per_operation.items()):
        print(f"  {op:<22}{count / n:6.1f} requests")
    writes = sum(c for op, c in s.turn.per_operation.items() if op in WRITES) / n
    seq = s.critical / n
    tx = s.turn.per_operation.get("transact_write_items", 0) / n
    print(f"all requests of run_turn: {s.turn.requests / n:.1f}")
    print(
        f"sequential round trips, message.received -> turn.completed: {seq:.1f}   "
        f"goal <= {GOAL_SEQUENTIAL}, ratio {seq / GOAL_SEQUENTIAL:.2f}"
    )
    print(f"write requests:         {writes:.1f}   goal <= {GOAL_WRITES}, ratio {writes / 10:.2f}")
    print(
        f"accepting the message (start_session, not counted above): {s.accept.requests / n:.1f}"
        " requests"
    )
    print(f"write units, sized from the items written: {s.turn.write_units / n:.1f} per turn")
    low = (seq - tx) * PLAIN_MS[0] + tx * TRANSACTION_MS[0]
    high = (seq - tx) * PLAIN_MS[1] + tx * TRANSACTION_MS[1]
    print(
        f"expected store time on real DynamoDB: about {low:.0f}-{high:.0f} ms per turn "
        f"({PLAIN_MS[0]:.0f}-{PLAIN_MS[1]:.0f} ms a request, "
        f"{TRANSACTION_MS[0]:.0f}-{TRANSACTION_MS[1]:.0f} ms a transaction)"
    )


def billed_gb_seconds(work: Work, invocations: int, memory_gb: float) -> float:
    """Lambda bills each invocation's duration rounded up to the millisecond."""
    per_call_ms = math.ceil(1000 * work.lambda_seconds() / invocations) if invocations else 0
    return invocations * per_call_ms / 1000 * memory_gb


def cost_rows(s: Scenario, memory_gb: float, scale: int) -> dict[str, float]:
    """List-price cost of `scale` turns shaped like the measured ones."""
    f = scale / s.turns
    units_r = s.accept.read_units + s.turn.read_units + s.read_back.read_units
    units_w = s.accept.write_units + s.turn.write_units + s.read_back.write_units
    api_calls = 2 * scale  # the POST that accepts, the GET that reads the reply back
    gb_s = (
        billed_gb_seconds(s.accept, s.turns, memory_gb)
        + billed_gb_seconds(s.turn, s.turns, memory_gb)
        + billed_gb_seconds(s.read_back, s.turns, memory_gb)
    ) * f
    return {
        "DynamoDB writes": units_w * f * price.DYNAMODB_WRITE_UNIT,
        "DynamoDB reads": units_r * f * price.DYNAMODB_READ_UNIT,
        "Lambda requests": 3 * scale * price.LAMBDA_REQUEST,
        "Lambda GB-seconds": gb_s * price.LAMBDA_GB_SECOND,
        "API Gateway requests": api_calls * price.HTTP_API_REQUEST,
        "Streams (hooks trigger)": price.STREAMS_READ_BY_LAMBDA,
    }


def print_costs(
    small: Scenario, large: Scenario, replay: tuple[Work, int, int], replay_turns: int
) -> None:
    memory_gb = template_memory_gb()
    print()
    print(f"cost at list prices ({price.AS_OF}); Lambda at {memory_gb * 1024:.0f} MB")
    print("per turn: the API function accepts (POST), the turn function runs it, the client")
    print("reads the turn back once (GET .../stream); the model's own time is not included")
    rows_small, rows_large = cost_rows(small, memory_gb, 1000), cost_rows(large, memory_gb, 1000)
    print(f"  {'':<26}{'1,000 turns':>14}{'with 32 KB result':>20}")
    for key in rows_small:
        print(f"  {key:<26}{dollars(rows_small[key]):>14}{dollars(rows_large[key]):>20}")
    print(
        f"  {'total':<26}{dollars(sum(rows_small.values())):>14}"
        f"{dollars(sum(rows_large.values())):>20}"
    )
    for label, s in (("1,000 turns", small), ("32 KB result", large)):
        per = 1 / s.turns
        print(
            f"  measured per turn ({label}): {(s.accept.requests + s.turn.requests) * per:.1f} "
            f"store requests, {(s.accept.write_units + s.turn.write_units) * per:.1f} write "
            f"units, {(s.accept.read_units + s.turn.read_units + s.read_back.read_units) * per:.1f}"
            f" read units, {1000 * (s.accept.lambda_seconds() + s.turn.lambda_seconds()) * per:.1f}"
            " ms in Lambda"
        )
    model_s = 1000 * memory_gb * price.LAMBDA_GB_SECOND
    print(f"  each second of model latency adds {dollars(model_s)} per 1,000 turns (Lambda waits)")
    work, count, size = replay
    replay_cost = (
        work.read_units * price.DYNAMODB_READ_UNIT
        + price.LAMBDA_REQUEST
        + price.HTTP_API_REQUEST * max(1, math.ceil(size / (512 * 1024)))
        + billed_gb_seconds(work, 1, memory_gb) * price.LAMBDA_GB_SECOND
    )
    print(
        f"  a {replay_turns}-turn session replayed once: {count} events, {size / 1024:.0f} KB, "
        f"{work.requests} requests, {work.read_units:.1f} read units, "
        f"{1000 * work.lambda_seconds():.0f} ms: {dollars(replay_cost)}"
    )
    # AgentCore Runtime bills active CPU and peak memory per second; an agent that is
    # mostly waiting on its model is billed mostly for memory. One vCPU-second and 2 GB
    # for a turn's second of activity is a rough figure, for comparison only.
    agentcore = 1000 * (price.AGENTCORE_VCPU_HOUR + 2 * price.AGENTCORE_GB_HOUR) / 3600
    print(
        f"  for comparison, AgentCore Runtime at 1 vCPU and 2 GB active for one second a turn: "
        f"{dollars(agentcore)} per 1,000 turns, before storage"
    )


async def main(turns: int, replay_turns: int) -> None:
    from tests.fixtures.dynamodb import start_moto_server, stop_moto_server

    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench")):
        os.environ.setdefault(name, value)
    url, proc = start_moto_server()
    try:
        with tempfile.TemporaryDirectory() as raw:
            tmp = Path(raw)
            await setup_ours(tmp, memory=True)
            project = ours_project(tmp, memory=True)
            small = await one_tool_turns(Rig(project, url, "small", tmp / "s1"), turns)
            write_tool(project, LARGE_RESULT)
            large = await one_tool_turns(Rig(project, url, "large", tmp / "s2"), turns)
            write_tool(project, 0)
            replay = await replayed_session(Rig(project, url, "replay", tmp / "s3"), replay_turns)
    finally:
        stop_moto_server(proc)
    print_round_trips(small)
    print_costs(small, large, replay, replay_turns)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--replay-turns", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(main(args.turns, args.replay_turns))
