"""How fast a pause brakes a turn, on the file store and on DynamoDB (a local moto server).

A scripted model asks for a tool call at every step, forever; the session is paused while a
model call streams (`model`) or while a 60 s tool runs (`tool`, `stop_grace` 0.5 s). Printed
per store and case, over `--runs` runs: the time from the pause until the turn had ended,
the time from the pause to the last model call (negative: it began before the pause), and
the model calls made after the pause, which must be 0. The goal (issue 36) is beside it:
the turn stops within 5 s. Nothing is asserted (tests/engine/test_pause_measured.py does).

    python bench/bench_pause.py [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.engine.pause_rig import PauseMeasure, Where, measure_pause, write_agent

GOAL_SECONDS = 5.0


def file_store(root: Path) -> Any:
    from agentkit.store.files import FileStore

    return FileStore(root)


def dynamo_store(endpoint: str) -> Any:
    from agentkit.store.dynamodb import DynamoDBSettings, DynamoDBStore, create_tables, make_client

    suffix = uuid.uuid4().hex[:12]
    settings = DynamoDBSettings(
        endpoint_url=endpoint,
        region="us-east-1",
        sessions_table=f"b{suffix}-sessions",
        events_table=f"b{suffix}-events",
    )
    client = make_client(settings)
    create_tables(client, settings)
    return DynamoDBStore(settings, client=client)


async def run(kind: str, where: Where, runs: int, tmp: Path, endpoint: str) -> list[PauseMeasure]:
    out = []
    for i in range(runs):
        base = tmp / f"{kind}-{where}-{i}"
        bundle = write_agent(base / "proj")
        store = file_store(base / "state") if kind == "files" else dynamo_store(endpoint)
        try:
            out.append(await measure_pause(bundle, store, base / "state", where))
        finally:
            await store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from agentkit.emulator.moto_server import start_moto, stop_moto

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    endpoint, proc = start_moto()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for kind in ("files", "dynamodb"):
                for where in ("model", "tool"):
                    measured = asyncio.run(run(kind, where, args.runs, Path(tmp), endpoint))
                    rows.append((kind, where, measured))
    finally:
        stop_moto(proc)
    runs = args.runs
    print(f"pause of a turn that never ends, {runs} runs each (goal: stopped < {GOAL_SECONDS} s)")
    head = (
        "store",
        "paused during",
        "stopped after (median / max)",
        "last model call",
        "calls after pause",
    )
    print(f"{head[0]:<10}{head[1]:<15}{head[2]:<30}{head[3]:<18}{head[4]}")
    for kind, where, measured in rows:
        stopped = [m.stopped_after for m in measured]
        last = max(m.last_call_after_pause for m in measured)
        after = sum(m.calls_after for m in measured)
        stop_text = f"{statistics.median(stopped) * 1000:.0f} / {max(stopped) * 1000:.0f} ms"
        last_text = f"{last * 1000:+.0f} ms"
        print(f"{kind:<10}{where:<15}{stop_text:<30}{last_text:<18}{after}")


if __name__ == "__main__":
    main()
