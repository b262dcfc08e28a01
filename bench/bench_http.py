"""HTTP API under load: 50 concurrent sessions x 5 turns with the `test` model against a
real `agentkit serve`, then the same client against a floor server in the same run.

Measures throughput (turns/s), p50/p99 latency of message acceptance (POST until 200) and
of the first streamed event of each turn (POST sent until the first NDJSON line arrives),
and checks that every session's stream, as read in pieces across turns, equals its final
dump: zero lost or duplicated indexes.

The floor is a bare FastAPI app with no engine: accepting a message appends the same number
of NDJSON events a real turn produced to a per-session file, and the stream reads them back.
Its numbers are what HTTP + JSON + file appends cost on this machine; the ratio says what
the engine, the store's guarantees and the model loop add on top.

Run: python bench/bench_http.py [--sessions 50] [--turns 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response

AGENT = {
    "agent/agent.py": 'from agentkit import define_agent\n\nagent = define_agent(model="test")\n',
    "agent/instructions.md": "Answer briefly.\n",
    "agent/tools/get_weather.py": textwrap.dedent(
        """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class WeatherInput(BaseModel):
            city: str


        @define_tool(description="Get the weather for a city.")
        async def get_weather(input: WeatherInput, ctx: ToolContext) -> dict:
            return {"city": input.city, "tempC": 21}
        """
    ),
}
TURN_END = {"turn.completed", "turn.failed"}


@dataclass
class Stats:
    accept: list[float] = field(default_factory=list)
    first_event: list[float] = field(default_factory=list)
    events_per_turn: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    turns: int = 0
    wall: float = 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited early ({proc.returncode})")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"server at {url} did not come up")


async def read_turn(
    client: httpx.AsyncClient, url: str, sid: str, start: int, sent: float, stats: Stats
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    async with client.stream(
        "GET", f"{url}/v1/session/{sid}/stream", params={"startIndex": start, "window": 60}
    ) as response:
        async for line in response.aiter_lines():
            if not line:
                continue
            if not events:
                stats.first_event.append(time.perf_counter() - sent)
            events.append(json.loads(line))
            if events[-1]["type"] in TURN_END:
                break
    return events


async def one_session(
    client: httpx.AsyncClient, url: str, turns: int, stats: Stats, i: int
) -> None:
    seen: list[dict[str, Any]] = []
    sid = token = ""
    for turn in range(turns):
        message = f"weather in city {i}-{turn}"
        sent = time.perf_counter()
        if turn == 0:
            r = await client.post(f"{url}/v1/session", json={"message": message})
        else:
            r = await client.post(
                f"{url}/v1/session/{sid}",
                json={"continuationToken": token, "message": message},
            )
        stats.accept.append(time.perf_counter() - sent)
        if r.status_code != 200:
            stats.problems.append(f"session {i} turn {turn}: {r.status_code} {r.text[:120]}")
            return
        sid, token = r.json()["sessionId"], r.json()["continuationToken"]
        events = await read_turn(client, url, sid, len(seen), sent, stats)
        stats.events_per_turn.append(len(events))
        seen += events
        stats.turns += 1
    dumped = await client.get(f"{url}/v1/session/{sid}/events")
    recorded = [json.loads(x) for x in dumped.text.splitlines() if x]
    indexes = [e["index"] for e in seen]
    if indexes != list(range(len(seen))):
        stats.problems.append(f"session {i}: streamed indexes not gap-free/unique")
    if recorded[: len(seen)] != seen:
        stats.problems.append(f"session {i}: streamed events differ from the recorded stream")


async def drive(url: str, sessions: int, turns: int) -> Stats:
    stats = Stats()
    limits = httpx.Limits(max_connections=sessions * 2 + 10)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(*(one_session(client, url, turns, stats, i) for i in range(sessions)))
        stats.wall = time.perf_counter() - started
    return stats


# ---- the floor: a bare FastAPI app appending the same events to files ------------------


def floor_app(root: Path, per_turn: int) -> Any:
    app = FastAPI()
    locks: dict[str, asyncio.Lock] = {}

    def append(sid: str, message: str) -> None:
        path = root / f"{sid}.ndjson"
        count = sum(1 for _ in path.open()) if path.exists() else 0
        with path.open("a") as f:
            for k in range(per_turn):
                event = {"type": "x", "index": count + k, "sessionId": sid, "data": {"m": message}}
                f.write(json.dumps(event) + "\n")

    async def accept(sid: str, request: Request) -> JSONResponse:
        body = await request.json()
        async with locks.setdefault(sid, asyncio.Lock()):
            await asyncio.to_thread(append, sid, body["message"])
        return JSONResponse({"ok": True, "sessionId": sid, "continuationToken": "t"})

    @app.post("/v1/session")
    async def start(request: Request) -> JSONResponse:
        return await accept("ses_" + os.urandom(8).hex(), request)

    @app.post("/v1/session/{sid}")
    async def follow(sid: str, request: Request) -> JSONResponse:
        return await accept(sid, request)

    def lines(sid: str, start: int) -> bytes:
        with (root / f"{sid}.ndjson").open() as f:
            return "".join(line for i, line in enumerate(f) if i >= start).encode()

    @app.get("/v1/session/{sid}/stream")
    async def stream(sid: str, startIndex: int = 0, window: float = 0) -> Response:
        return Response(
            await asyncio.to_thread(lines, sid, startIndex), media_type="application/x-ndjson"
        )

    @app.get("/v1/session/{sid}/events")
    async def events(sid: str) -> Response:
        return Response(await asyncio.to_thread(lines, sid, 0), media_type="application/x-ndjson")

    @app.get("/v1/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    return app


def run_floor_server(port: int, root: Path, per_turn: int) -> None:
    import uvicorn

    uvicorn.run(floor_app(root, per_turn), host="127.0.0.1", port=port, log_level="warning")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def report(name: str, stats: Stats) -> None:
    print(
        f"{name:<8} turns={stats.turns:<4} wall={stats.wall:6.2f}s "
        f"throughput={stats.turns / stats.wall:7.1f} turns/s  "
        f"accept p50={pct(stats.accept, 0.5):7.1f}ms p99={pct(stats.accept, 0.99):7.1f}ms  "
        f"first-event p50={pct(stats.first_event, 0.5):7.1f}ms "
        f"p99={pct(stats.first_event, 0.99):7.1f}ms  problems={len(stats.problems)}"
    )
    for problem in stats.problems[:5]:
        print(f"    {problem}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--floor-server", nargs=3, metavar=("PORT", "DIR", "PER_TURN"))
    args = parser.parse_args()
    if args.floor_server:
        port, root, per_turn = args.floor_server
        run_floor_server(int(port), Path(root), int(per_turn))
        return

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
            engine = asyncio.run(drive(f"http://127.0.0.1:{port}/bench", args.sessions, args.turns))
        finally:
            server.terminate()
            server.wait(30)

        per_turn = round(statistics.mean(engine.events_per_turn or [8]))
        floor_root = base / "floor"
        floor_root.mkdir()
        fport = free_port()
        floor = subprocess.Popen(
            [sys.executable, __file__, "--floor-server", str(fport), str(floor_root), str(per_turn)]
        )
        try:
            wait_up(f"http://127.0.0.1:{fport}/v1/health", floor)
            bare = asyncio.run(drive(f"http://127.0.0.1:{fport}", args.sessions, args.turns))
        finally:
            floor.terminate()
            floor.wait(30)

    print(f"{args.sessions} sessions x {args.turns} turns, ~{per_turn} events per turn")
    report("agentkit", engine)
    report("floor", bare)
    throughput = (engine.turns / engine.wall) / (bare.turns / bare.wall)
    print(
        f"ratio agentkit/floor: throughput x{throughput:.2f}, "
        f"accept p50 x{pct(engine.accept, 0.5) / pct(bare.accept, 0.5):.1f}, "
        f"first-event p50 x{pct(engine.first_event, 0.5) / pct(bare.first_event, 0.5):.1f}"
    )


if __name__ == "__main__":
    main()
