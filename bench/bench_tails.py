"""Many followers of one session: each tailing the store on its own (the old stream loop)
against one shared tail per session (`agentkit.engine.tails`), in the same run.

N followers are spread over `--sessions` sessions of a file store, in one process, while a
writer appends `--batch` events to each session `--rate` times a second (a `test` turn
appends 14 events in about five appends). Every event is timed from just before its append
to the moment a follower has its NDJSON bytes in hand. The HTTP layer in front is the same
for both paths and is left out, so the figures are what each follow path costs.

- old: every follower loops `store.follow(session, next, timeout)` after the ownership
  check (`get_session`), and encodes what it got to NDJSON, as `follow_stream` did;
- new: every follower is a `Subscription` of its session's shared tail: one reader per
  session wakes on the append, encodes once, and each follower takes from its own index.

The two run in alternating rounds (old, new, old, new, ...) so a busy neighbour on the
machine weighs on both alike. Prints p50 / p95 per path and the ratio old / new. Nothing is
asserted.

    python bench/bench_tails.py                                   # 200 followers, 1 session
    python bench/bench_tails.py --followers 1000 --sessions 1 --seconds 10 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from agentkit.engine.tails import SessionTails
from agentkit.events import MessageAppended, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.files import FileStore

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_http import pct

GOAL_P95_MS = 50.0
Follow = Callable[[FileStore, str, int, dict[int, float], list[float]], Awaitable[None]]


async def old_follower(
    store: FileStore, sid: str, start: int, stamps: dict[int, float], lags: list[float]
) -> None:
    """The stream loop before shared tails: its own follow of the store per follower."""
    index = start
    while True:
        if await store.get_session(sid) is None:  # the per-call ownership check
            return
        found = await store.follow(sid, index, 15.0)
        fresh = [e for e in found if e.index >= index]
        if not fresh:
            continue
        _ = b"".join(e.to_line() for e in fresh)  # what it sent
        now = time.perf_counter()
        lags.extend(now - stamps[e.index] for e in fresh)
        index = fresh[-1].index + 1


def new_follower_on(tails: SessionTails) -> Follow:
    async def follow(
        store: FileStore, sid: str, start: int, stamps: dict[int, float], lags: list[float]
    ) -> None:
        sub = tails.subscribe(sid, start)
        try:
            while True:
                batch = await sub.next(None)
                if batch is None:
                    return
                _ = batch.data  # what it sends
                now = time.perf_counter()
                lags.extend(now - stamps[e.index] for e in batch.events)
        finally:
            sub.close()

    return follow


async def one_round(
    store: FileStore, follow: Follow, args: argparse.Namespace
) -> tuple[list[float], float]:
    sids = []
    for _ in range(args.sessions):
        record = SessionRecord(id=new_session_id())
        await store.create_session(record)
        sids.append(record.id)
    stamps: dict[str, dict[int, float]] = {sid: {} for sid in sids}
    lags: list[float] = []
    tasks = [
        asyncio.ensure_future(follow(store, sid, 0, stamps[sid], lags))
        for n in range(args.followers)
        for sid in [sids[n % len(sids)]]
    ]
    await asyncio.sleep(0.5)  # every follower reaches its first wait
    loop = asyncio.get_running_loop()
    period = 1.0 / args.rate
    next_at = loop.time()
    end = loop.time() + args.seconds
    written = dict.fromkeys(sids, 0)
    behind = 0.0
    cpu0 = time.process_time()
    while loop.time() < end:
        for sid in sids:
            at = time.perf_counter()
            for i in range(args.batch):
                stamps[sid][written[sid] + i] = at
            await store.append(sid, [draft(MessageAppended(text="x" * 80))] * args.batch)
            written[sid] += args.batch
        next_at += period
        pause = next_at - loop.time()
        if pause > 0:
            await asyncio.sleep(pause)
        else:
            behind -= pause
    cpu = time.process_time() - cpu0
    await asyncio.sleep(0.5)  # the last events reach their followers
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    for sid in sids:
        await store.delete_session(sid)
    return lags, cpu / args.seconds


async def run(args: argparse.Namespace, root: Path) -> None:
    store = FileStore(root / "state")
    tails = SessionTails(store)
    paths: dict[str, Follow] = {"old": old_follower, "new": new_follower_on(tails)}
    lags: dict[str, list[float]] = {name: [] for name in paths}
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, follow in paths.items():
            got, used = await one_round(store, follow, args)
            lags[name].extend(got)
            cpu[name].append(used)
    await store.close()
    expected = args.followers * args.rate * args.seconds * args.batch * args.rounds
    print(
        f"{args.followers} followers over {args.sessions} session(s), {args.batch} events x "
        f"{args.rate}/s per session, {args.seconds:.0f} s x {args.rounds} round(s) per path"
    )
    figures = {}
    for name in paths:
        p50, p95 = pct(lags[name], 0.5), pct(lags[name], 0.95)
        figures[name] = (p50, p95)
        share = sum(cpu[name]) / len(cpu[name])
        print(
            f"{name}: {len(lags[name])} deliveries (about {expected:.0f} written x followers), "
            f"append -> follower p50 {p50:.1f} ms, p95 {p95:.1f} ms, "
            f"process CPU {share:.0%} of a core"
        )
    (o50, o95), (n50, n95) = figures["old"], figures["new"]
    print(f"ratio old / new: p50 {o50 / n50:.1f}x, p95 {o95 / n95:.1f}x")
    verdict = "met" if n95 <= GOAL_P95_MS else "not met"
    print(
        f"new p95 / goal: {n95 / GOAL_P95_MS:.2f}x   goal p95 <= {GOAL_P95_MS:.0f} ms ({verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=1)
    parser.add_argument("--rate", type=float, default=100.0, help="appends per second")
    parser.add_argument("--batch", type=int, default=3, help="events per append")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
