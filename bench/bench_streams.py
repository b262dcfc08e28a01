"""Many streams on one process: N long-lived NDJSON `GET /v1/session/{id}/stream` clients
against a real `agentkit serve` (file store, `test` model) on loopback, while a driver runs
follow-up turns at a fixed rate, then the same against a baseline in the same run.

Each client follows its own session. The driver posts follow-ups round-robin over the
sessions at `--rate` turns/s for `--seconds` s. Every event a client receives during the
load is timed from its `at` (stamped by the server as it drafts the event, millisecond
precision, same clock) to its arrival. Reported per server:

- p50 / p95 of append -> arrival, and errors (failed posts, broken streams, index gaps);
- resident memory (VmRSS of the server process) per idle session and per idle open stream,
  and open descriptors, read from /proc before and after;
- CPU used by the idle server holding every stream open, from /proc/<pid>/stat over
  `--idle-seconds` (goal: under 2% of one core: nothing polls on a fixed interval).

The baseline is a bare FastAPI app served by uvicorn: an in-memory queue per stream, and a
follow-up that puts the same number of events a real turn makes on its session's queues.
Its numbers are what HTTP + NDJSON fan-out costs here; the ratio is what agentkit adds.

The clients speak raw HTTP/1.1 over asyncio streams (not httpx) so that the client side
costs little on the same cores. Linux only (/proc). Raises its descriptor limit to the hard
limit. Nothing is asserted.

Found with it (docs/sessions.md, "Many streams on one process", has the tables): past 256
followed sessions the file store's cache of parsed sessions (`cache_sessions`) thrashed
(now each tail pins its session there); each 15 s round of a quiet tail restarted the
check for other processes' appends at 0.25 s (the back-off now carries over); a tail's only
follower kept a copy of every line it took; full collections of the objects alive since
start-up were most of the p95 (`serve` now freezes them); `serve`'s 1,000-connection
default refused the bench's streams.

Last run (1,000 streams, 20 turns/s for 60 s, quiet two-core machine): agentkit p50 1.2 ms,
p95 2.5 ms; baseline p50 1.3 ms, p95 1.8 ms (1.41x); errors 0; 50.0 KB per idle open
stream (baseline 34.0), 12.3 KB per idle session; descriptors 536 idle, 1,539 with
streams open; 0.8% of a core idle with every stream open (baseline 0.3%), nearly all of it
the event loop's thread. On the same machine under other test suites: p95 5 to 19 ms,
idle 1.6% to 2.4%.
First run: p50 853 ms, p95 3,972 ms, 52.3 KB per stream, 9.5% of a core idle.

    python bench/bench_streams.py                  # short: 100 clients, 10 turns/s, 10 s
    python bench/bench_streams.py --clients 1000 --rate 20 --seconds 60 --idle-seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, StreamingResponse

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_http import AGENT, free_port, pct, wait_up

GOAL_P95_MS = 50.0
GOAL_RATIO = 1.5
GOAL_KB_PER_STREAM = 50.0
GOAL_IDLE_CORE = 0.02
EVENTS_PER_TURN = 14  # what the baseline appends per follow-up: a `test` turn makes 14


def at_seconds(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(stat: Path) -> float:
    """The CPU seconds in a /proc `stat` file (a process's or one thread's)."""
    # Fields after the command name (which may hold spaces): utime and stime are 14 and 15.
    rest = stat.read_text().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds per thread of `pid`, keyed by a label naming the thread (the event
    loop's thread has the pid for its id)."""
    found: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            where = "the event loop" if task.name == str(pid) else "another thread"
            found[f"{task.name} {name} ({where})"] = cpu_seconds(task / "stat")
        except OSError:
            continue  # the thread ended
    return found


@dataclass
class Result:
    lags: list[float] = field(default_factory=list)
    by_type: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    kb_per_session: float = 0.0
    kb_per_stream: float = 0.0
    fds_idle: int = 0
    fds_streams: int = 0
    idle_core: float = 0.0
    idle_threads: dict[str, float] = field(default_factory=dict)  # the busy ones, idle
    turns: int = 0
    events: int = 0


class StreamClient:
    """One NDJSON stream over a raw HTTP/1.1 connection (chunked transfer encoding)."""

    def __init__(self, port: int, path: str, result: Result, load: asyncio.Event) -> None:
        self.port, self.path, self.result, self.load = port, path, result, load
        self.connected = asyncio.Event()
        self.next_index = 0
        self.task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 20)
        try:
            writer.write(
                f"GET {self.path} HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: */*\r\n\r\n".encode()
            )
            status = await reader.readline()
            if b" 200 " not in status:
                self.result.errors.append(f"stream status {status!r}")
                return
            while (await reader.readline()) not in (b"\r\n", b""):
                pass
            self.connected.set()
            pending = b""
            while True:
                size_line = await reader.readline()
                if not size_line:
                    self.result.errors.append("stream closed by the server")
                    return
                size = int(size_line.strip() or b"0", 16)
                chunk = await reader.readexactly(size + 2)
                if size == 0:
                    self.result.errors.append("stream ended by the server")
                    return
                arrived = time.time()
                pending += chunk[:-2]
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self.take(json.loads(line), arrived)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # counted; the bench goes on
            self.result.errors.append(f"stream: {exc!r}")
        finally:
            writer.close()

    def take(self, event: dict[str, Any], arrived: float) -> None:
        if event["index"] != self.next_index:
            self.result.errors.append(f"index {event['index']}, expected {self.next_index}")
        self.next_index = event["index"] + 1
        if self.load.is_set():
            lag = arrived - at_seconds(event["at"])
            self.result.lags.append(lag)
            self.result.by_type.setdefault(event["type"], []).append(lag)
            self.result.events += 1


async def open_sessions(url: str, count: int, client: httpx.AsyncClient) -> list[list[str]]:
    gate = asyncio.Semaphore(16)

    async def one(i: int) -> list[str]:
        async with gate:
            r = await client.post(f"{url}/v1/session", json={"message": f"weather in {i}"})
            r.raise_for_status()
            body = r.json()
            return [body["sessionId"], body["continuationToken"]]

    return list(await asyncio.gather(*(one(i) for i in range(count))))


async def drive(port: int, prefix: str, pid: int, args: argparse.Namespace, result: Result) -> None:
    url = f"http://127.0.0.1:{port}{prefix}"
    # Idle connections dropped before the servers' 5 s keep-alive closes them: at the same
    # expiry a post could go out on a connection the server was closing (a ReadError).
    limits = httpx.Limits(max_connections=64, keepalive_expiry=2.0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        base_rss = rss_kb(pid)
        sessions = await open_sessions(url, args.clients, client)
        await asyncio.sleep(1)  # let the first turns settle
        sessions_rss, result.fds_idle = rss_kb(pid), fds(pid)
        result.kb_per_session = (sessions_rss - base_rss) / args.clients

        load = asyncio.Event()
        streams = [
            StreamClient(port, f"{prefix}/v1/session/{sid}/stream", result, load)
            for sid, _ in sessions
        ]
        for s in streams:
            s.task = asyncio.create_task(s.run())
        await asyncio.wait_for(asyncio.gather(*(s.connected.wait() for s in streams)), 120)
        await asyncio.sleep(1)  # replays delivered
        result.kb_per_stream = (rss_kb(pid) - sessions_rss) / args.clients
        result.fds_streams = fds(pid)

        stat = Path(f"/proc/{pid}/stat")
        before, threads, t0 = cpu_seconds(stat), thread_cpu(pid), time.monotonic()
        await asyncio.sleep(args.idle_seconds)
        took = time.monotonic() - t0
        result.idle_core = (cpu_seconds(stat) - before) / took
        after = thread_cpu(pid)
        result.idle_threads = {
            key: (after[key] - threads.get(key, 0.0)) / took
            for key in after
            if after[key] > threads.get(key, 0.0)
        }

        load.set()
        posts: set[asyncio.Task[None]] = set()

        async def follow_up(i: int) -> None:
            sid, token = sessions[i]
            try:
                r = await client.post(
                    f"{url}/v1/session/{sid}", json={"continuationToken": token, "message": "and?"}
                )
                if r.status_code >= 300:
                    result.errors.append(f"post {r.status_code}: {r.text[:120]}")
                    return
                sessions[i][1] = r.json()["continuationToken"]
                result.turns += 1
            except httpx.HTTPError as exc:
                result.errors.append(f"post: {exc!r}")

        start = time.monotonic()
        total = int(args.rate * args.seconds)
        for n in range(total):
            await asyncio.sleep(max(0.0, start + n / args.rate - time.monotonic()))
            task = asyncio.create_task(follow_up(n % args.clients))
            posts.add(task)
            task.add_done_callback(posts.discard)
        await asyncio.gather(*posts)
        await asyncio.sleep(2)  # the last turns' events reach their streams
        load.clear()
        for s in streams:
            assert s.task is not None
            if s.task.done():
                continue
            s.task.cancel()
        await asyncio.gather(*(s.task for s in streams if s.task), return_exceptions=True)


def baseline_app() -> Any:
    """Bare FastAPI NDJSON fan-out over in-memory queues: no store, no engine."""
    app = FastAPI()
    logs: dict[str, list[bytes]] = {}
    queues: dict[str, set[asyncio.Queue[bytes]]] = {}

    def append(sid: str, count: int) -> None:
        log = logs.setdefault(sid, [])
        for _ in range(count):
            at = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            line = json.dumps({"index": len(log), "type": "note", "at": at}).encode() + b"\n"
            log.append(line)
            for q in queues.get(sid, ()):
                q.put_nowait(line)

    @app.post("/v1/session")
    async def start(request: Request) -> JSONResponse:
        await request.json()
        sid = secrets.token_hex(8)
        append(sid, EVENTS_PER_TURN)
        return JSONResponse({"sessionId": sid, "continuationToken": secrets.token_hex(8)})

    @app.post("/v1/session/{sid}")
    async def follow(sid: str, request: Request) -> JSONResponse:
        await request.json()
        append(sid, EVENTS_PER_TURN)
        return JSONResponse({"sessionId": sid, "continuationToken": secrets.token_hex(8)})

    @app.get("/v1/session/{sid}/stream")
    async def stream(sid: str) -> StreamingResponse:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        queues.setdefault(sid, set()).add(queue)

        async def body() -> Any:
            try:
                yield b"".join(logs.get(sid, []))
                while True:
                    first = await queue.get()
                    batch = [first]
                    while not queue.empty():
                        batch.append(queue.get_nowait())
                    yield b"".join(batch)
            finally:
                queues[sid].discard(queue)

        return StreamingResponse(body(), media_type="application/x-ndjson")

    @app.get("/v1/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    return app


def run_baseline_server(port: int) -> None:
    import uvicorn

    uvicorn.run(baseline_app(), host="127.0.0.1", port=port, log_level="warning")


def measure(cmd: list[str], port: int, prefix: str, args: argparse.Namespace) -> Result:
    env = {**os.environ, "AGENTKIT_MODEL": "test"}
    server = subprocess.Popen(cmd, env=env)
    result = Result()
    try:
        wait_up(f"http://127.0.0.1:{port}/v1/health", server)
        asyncio.run(drive(port, prefix, server.pid, args, result))
    finally:
        server.terminate()
        server.wait(30)
    return result


def report(name: str, r: Result) -> None:
    p50, p95 = pct(r.lags, 0.5), pct(r.lags, 0.95)
    print(f"{name}:")
    print(f"  {r.turns} turns, {r.events} events timed; append -> arrival p50 {p50:.1f} ms, "
          f"p95 {p95:.1f} ms; errors {len(r.errors)}")  # fmt: skip
    for e in r.errors[:5]:
        print(f"    {e}")
    worst = sorted(r.by_type.items(), key=lambda kv: -pct(kv[1], 0.95))[:4]
    if len(worst) > 1:
        print("  slowest event types at p95: " + ", ".join(
            f"{t} {pct(v, 0.95):.1f} ms" for t, v in worst))  # fmt: skip
    print(f"  RSS per idle session {r.kb_per_session:.1f} KB, per idle open stream "
          f"{r.kb_per_stream:.1f} KB; descriptors {r.fds_idle} idle, {r.fds_streams} "
          f"with streams open")  # fmt: skip
    print(f"  idle with every stream open: {r.idle_core * 100:.2f}% of a core")
    for key, share in sorted(r.idle_threads.items(), key=lambda kv: -kv[1]):
        print(f"    thread {key}: {share * 100:.2f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--rate", type=float, default=10.0, help="turns per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--baseline-server", type=int, metavar="PORT")
    args = parser.parse_args()
    if args.baseline_server:
        run_baseline_server(args.baseline_server)
        return
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the servers inherit it
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        project = base / "bench"
        for rel, text in AGENT.items():
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / rel).write_text(text)
        port = free_port()
        cli = [sys.executable, "-c", "import sys; from agentkit.cli import main; sys.exit(main())"]
        ours = measure(
            [*cli, "serve", "--dir", str(project), "--port", str(port),
             "--state-root", str(base / "state"), "--log-level", "warning",
             # Room for every stream and the driver's pool: `serve` refuses connections
             # past 1,000 by default (its guard against stalled clients).
             "--max-connections", str(args.clients + 256)],
            port, "/bench", args,
        )  # fmt: skip
        bport = free_port()
        baseline_cmd = [sys.executable, __file__, "--baseline-server", str(bport)]
        floor = measure(baseline_cmd, bport, "", args)
    print(f"{args.clients} streams, {args.rate:g} turns/s for {args.seconds:g} s, loopback")
    report("agentkit serve (file store)", ours)
    report("baseline (FastAPI + in-memory queues)", floor)
    p95, fp95 = pct(ours.lags, 0.95), pct(floor.lags, 0.95)
    print(f"p95 {p95:.1f} ms (goal <= {GOAL_P95_MS:.0f} ms); ratio to baseline "
          f"{p95 / max(fp95, 1.0):.2f}x (goal <= {GOAL_RATIO}x; baseline floored at 1 ms, "
          f"the precision of `at`)")  # fmt: skip
    print(f"per stream {ours.kb_per_stream:.1f} KB (goal <= {GOAL_KB_PER_STREAM:.0f} KB); "
          f"idle {ours.idle_core * 100:.2f}% of a core (goal < {GOAL_IDLE_CORE * 100:.0f}%); "
          f"errors {len(ours.errors) + len(floor.errors)} (goal 0)")  # fmt: skip


if __name__ == "__main__":
    main()
