"""Store round trips of one standard turn on DynamoDB (a local moto server it starts).

The turn is the one of bench_turn.py: the zero-latency model asks for one tool call, then
answers. The message is accepted first (`start_session`, not counted); then only
`run_turn` runs, from `message.received` to `turn.completed`, and every request it sends
is counted by operation, with the write units moto reports. The engine awaits its store
calls one after another, so the request count is also the number of sequential round
trips. The expected latency on real DynamoDB is estimated from published figures (single
-digit milliseconds per request; a transaction about twice a plain write). Nothing is
asserted; the goals (issue 19) are printed beside the numbers.

    python bench/bench_dynamo_turn.py [--turns 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_turn import ZeroLatency, setup_ours

GOAL_SEQUENTIAL = 6
GOAL_WRITES = 10
WRITES = {"put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item"}
PLAIN_MS, TRANSACTION_MS = (3.0, 8.0), (6.0, 16.0)  # per request, low and high estimates


async def main(turns: int) -> None:
    from agentkit.engine.runtime import AgentRuntime
    from agentkit.project.bundle import AgentBundle
    from agentkit.sessions import Principal
    from agentkit.store.dynamodb import DynamoDBSettings, DynamoDBStore, create_tables, make_client
    from tests.fixtures.dynamodb import start_moto_server, stop_moto_server

    for name, value in (("AWS_ACCESS_KEY_ID", "bench"), ("AWS_SECRET_ACCESS_KEY", "bench")):
        os.environ.setdefault(name, value)
    url, proc = start_moto_server()
    try:
        with tempfile.TemporaryDirectory() as raw:
            tmp = Path(raw)
            await setup_ours(tmp, memory=True)  # writes the project under tmp/ours-01
            settings = DynamoDBSettings(url, "us-east-1", "bench-sessions", "bench-events")
            client = make_client(settings)
            create_tables(client, settings)
            store = DynamoDBStore(settings, client=client)
            queued: list[tuple[str, str]] = []

            class Hold:
                async def dispatch(self, session_id: str, turn_id: str) -> None:
                    queued.append((session_id, turn_id))

            model = ZeroLatency()
            runtime = AgentRuntime(
                AgentBundle.discover(tmp / "ours-01"),
                store,
                dispatcher=Hold(),
                model_resolver=lambda _id: model,
                state_root=tmp / "state",
            )
            # Requests until the append that records `turn.completed` has returned: the
            # user's critical path (releasing the lease and checking the queue come after).
            marks: list[int] = []
            plain_append = store.append

            async def append(session_id: str, drafts: Any, **kw: Any) -> Any:
                done = await plain_append(session_id, drafts, **kw)
                if any(d.type == "turn.completed" for d in drafts):
                    marks.append(store.usage.request_count)
                return done

            store.append = append  # type: ignore[method-assign]
            critical = 0
            per_op: dict[str, int] = {}
            requests = writes = 0
            units = 0.0
            accept = 0
            for _ in range(turns):
                store.usage.reset()
                await runtime.start_session("Weather in Paris?", principal=Principal("bench"))
                accept += store.usage.request_count
                session_id, turn_id = queued.pop()
                store.usage.reset()
                await runtime.run_turn(session_id, turn_id)
                for op, n in store.usage.per_operation.items():
                    per_op[op] = per_op.get(op, 0) + n
                requests += store.usage.request_count
                writes += sum(n for op, n in store.usage.per_operation.items() if op in WRITES)
                units += store.usage.consumed_write_units
                assert marks, "the turn did not complete"
                critical += marks.pop()
    finally:
        stop_moto_server(proc)
    print(f"one-tool turn on DynamoDB (moto), run_turn only, mean of {turns} turns")
    print("requests by operation (the whole of run_turn):")
    for op, n in sorted(per_op.items()):
        print(f"  {op:<22}{n / turns:6.1f} requests")
    seq, w = critical / turns, writes / turns
    tx = per_op.get("transact_write_items", 0) / turns
    print(f"all requests of run_turn: {requests / turns:.1f}")
    print(
        f"sequential round trips, message.received -> turn.completed: {seq:.1f}   "
        f"goal <= {GOAL_SEQUENTIAL}, ratio {seq / GOAL_SEQUENTIAL:.2f}"
    )
    print(f"write requests:         {w:.1f}   goal <= {GOAL_WRITES}, ratio {w / 10:.2f}")
    print(
        f"accepting the message (start_session, not counted above): {accept / turns:.1f} requests"
    )
    print(f"write units reported by moto: {units / turns:.1f} per turn")
    low = (seq - tx) * PLAIN_MS[0] + tx * TRANSACTION_MS[0]
    high = (seq - tx) * PLAIN_MS[1] + tx * TRANSACTION_MS[1]
    print(
        f"expected store time on real DynamoDB: about {low:.0f}-{high:.0f} ms per turn "
        f"({PLAIN_MS[0]:.0f}-{PLAIN_MS[1]:.0f} ms a request, "
        f"{TRANSACTION_MS[0]:.0f}-{TRANSACTION_MS[1]:.0f} ms a transaction)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5)
    asyncio.run(main(parser.parse_args().turns))
