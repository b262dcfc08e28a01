"""The crash matrix: `kill -9` of the process running a tool call at four points, many
trials each, against a stand-in service that counts its effects per idempotency key.

The points (see `tests/engine/reconcile_rig.py`): before the call sends anything, after
the service applied the effect but before its answer arrives, after the answer but before
the result is recorded, and after the result is recorded. After each kill a fresh runtime
over the same store recovers the session (as a restart does), and the trial is judged
from the service's books and the session's events:

- duplicate effects: effects past the first under the call's key;
- silent losses: no effect under the key, yet the stream shows no error for the call;
- in doubt: the call's result was settled after the crash (`action.result` has `outcome`);
  resolved: that outcome is `reconciled` or `rerun`, not `unknown`.

Target: 0 duplicates, 0 silent losses, every call in doubt resolved where the tool has a
`reconcile` (or is idempotent). Numbers are printed, never asserted.

Run: python bench/bench_crash_matrix.py [--trials 100] [--store files|dynamodb]
                                        [--tools charge,notify,retry,plain]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agentkit.models.scripted import ScriptedModel, Step
from tests.engine.reconcile_rig import (
    POINTS,
    TOOLS,
    EffectsService,
    crash_at,
    idempotency_key,
    runtime,
    wait_lease_free,
    write_project,
)


@dataclass
class Row:
    trials: int = 0
    duplicates: int = 0
    losses: int = 0
    in_doubt: int = 0
    resolved: int = 0


async def trial(
    service: EffectsService, project: Path, spec: str, state: Path, tool: str, point: str, row: Row
) -> None:
    crashed = await asyncio.to_thread(crash_at, service, project, spec, state, tool, point)
    rt = runtime(project, spec, state, ScriptedModel([Step.text("after the crash")]))
    try:
        await wait_lease_free(rt.store, crashed.session_id)
        await rt.recover()
        await rt.dispatcher.drain()
        events = await rt.store.read(crashed.session_id)
    finally:
        await rt.store.close()
    count = service.effects.count(idempotency_key(crashed.session_id, "c1"))
    results = [e.data for e in events if e.type == "action.result" and e.data["callId"] == "c1"]
    row.trials += 1
    row.duplicates += max(0, count - 1)
    if count == 0 and not (results and results[0].get("isError")):
        row.losses += 1
    outcome = results[0].get("outcome") if results else None
    if outcome is not None:
        row.in_doubt += 1
        row.resolved += outcome in ("reconciled", "rerun")


def store_specs(kind: str, root: Path) -> tuple[Any, Any]:
    """A factory of store specs (one fresh store per trial) and what to stop at the end."""
    if kind == "files":
        counter = iter(range(10**9))
        return (lambda: f"files:{root / f'state{next(counter)}'}"), None
    import uuid

    from agentkit.emulator.moto_server import start_moto
    from agentkit.store.dynamodb import DynamoDBSettings, create_tables, make_client

    url, proc = start_moto()
    client = make_client(DynamoDBSettings(endpoint_url=url, region="us-east-1"))

    def spec() -> str:
        suffix = uuid.uuid4().hex[:12]
        s = DynamoDBSettings(
            endpoint_url=url,
            region="us-east-1",
            sessions_table=f"c{suffix}-sessions",
            events_table=f"c{suffix}-events",
        )
        create_tables(client, s)
        return f"dynamodb:{url}|{s.sessions_table}|{s.events_table}"

    return spec, proc


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100, help="trials per point and tool")
    parser.add_argument("--store", choices=["files", "dynamodb"], default="files")
    parser.add_argument("--tools", default="charge,notify", help=f"of {','.join(TOOLS)}")
    args = parser.parse_args()
    import os

    service = EffectsService()
    os.environ["EFFECTS_URL"] = service.url  # the recovering runtime's tools call it too
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = write_project(root / "proj")
        spec, proc = store_specs(args.store, root)
        rows: dict[tuple[str, str], Row] = {}
        try:
            for tool in args.tools.split(","):
                for point in POINTS:
                    row = rows.setdefault((tool, point), Row())
                    for n in range(args.trials):
                        state = root / f"work-{tool}-{point}-{n}"
                        await trial(service, project, spec(), state, tool, point, row)
        finally:
            service.close()
            if proc is not None:
                from agentkit.emulator.moto_server import stop_moto

                stop_moto(proc)
    print(
        f"crash matrix, {args.store} store, {args.trials} trials per row, "
        f"{time.monotonic() - started:.0f} s"
    )
    head = (
        "tool",
        "kill -9 at",
        "trials",
        "duplicate effects",
        "silent losses",
        "in doubt",
        "resolved",
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (tool, point), r in rows.items():
        cells = (tool, point, r.trials, r.duplicates, r.losses, r.in_doubt, r.resolved)
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    asyncio.run(main())
