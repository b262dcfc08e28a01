"""Streaming latency: how long after an event is appended a connected client sees it on
`GET /v1/session/{id}/stream`, against a real `agentkit serve` (file store, `test` model).

For each turn the client first connects its stream (past the events it has already seen),
then posts the follow-up; every event of the turn is timed from its `at` (set by the server
when it drafts the event, just before appending it, so this slightly overstates; millisecond
precision, same machine clock) to the moment its line arrives. Prints p50 and p95 beside
the goal (p95 <= 20 ms). Nothing is asserted.

Not covered here: the Lambda long-poll path under moto (the issue's second goal).

    python bench/bench_stream.py [--turns 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_http import AGENT, TURN_END, free_port, pct, wait_up

GOAL_P95_MS = 20.0


def at_seconds(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


async def one_turn(
    client: httpx.AsyncClient, url: str, sid: str, token: str, start: int, lags: list[float]
) -> tuple[str, int]:
    connected = asyncio.Event()
    events: list[dict[str, Any]] = []

    async def read() -> None:
        params = {"startIndex": start, "window": 60}
        async with client.stream("GET", f"{url}/v1/session/{sid}/stream", params=params) as r:
            connected.set()
            async for line in r.aiter_lines():
                if not line:
                    continue
                arrived = time.time()
                event = json.loads(line)
                lags.append(arrived - at_seconds(event["at"]))
                events.append(event)
                if event["type"] in TURN_END:
                    return

    reader = asyncio.create_task(read())
    await asyncio.wait_for(connected.wait(), 60)
    r = await client.post(
        f"{url}/v1/session/{sid}", json={"continuationToken": token, "message": "and now?"}
    )
    r.raise_for_status()
    await asyncio.wait_for(reader, 120)
    return r.json()["continuationToken"], start + len(events)


async def drive(url: str, turns: int) -> list[float]:
    lags: list[float] = []
    async with httpx.AsyncClient(timeout=120) as client:
        r = await client.post(f"{url}/v1/session", json={"message": "weather in Paris"})
        r.raise_for_status()
        sid, token = r.json()["sessionId"], r.json()["continuationToken"]
        dumped = await client.get(f"{url}/v1/session/{sid}/stream", params={"window": 30})
        seen = [json.loads(x) for x in dumped.text.splitlines() if x]
        start = len(seen)
        for _ in range(turns):
            token, start = await one_turn(client, url, sid, token, start, lags)
    return lags


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = base / "bench"
        for rel, text in AGENT.items():
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / rel).write_text(text)
        port = free_port()
        env = {**os.environ, "AGENTKIT_MODEL": "test"}
        cmd = [sys.executable, "-c", "import sys; from agentkit.cli import main; sys.exit(main())"]
        server = subprocess.Popen(
            [*cmd, "serve", "--dir", str(project), "--port", str(port),
             "--state-root", str(base / "state"), "--log-level", "warning"],
            env=env,
        )  # fmt: skip
        try:
            wait_up(f"http://127.0.0.1:{port}/v1/health", server)
            lags = asyncio.run(drive(f"http://127.0.0.1:{port}/bench", args.turns))
        finally:
            server.terminate()
            server.wait(30)
    p50, p95 = pct(lags, 0.5), pct(lags, 0.95)
    print(f"{len(lags)} events over {args.turns} turns, append -> visible on GET /stream")
    print(f"local (agentkit serve, file store): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    verdict = "met" if p95 <= GOAL_P95_MS else "not met"
    print(f"p95 / goal: {p95 / GOAL_P95_MS:.2f}x   goal p95 <= {GOAL_P95_MS:.0f} ms ({verdict})")
    print("(timestamps have millisecond precision: each figure is within about 1 ms)")


if __name__ == "__main__":
    main()
