"""Timers and hooks, locally: how late a reminder lands, and how far hooks trail the stream.

1. Reminder latency: from a reminder's due instant to its `message.received` event being
   recorded, through the real runtime (memory store, test model) and the wall-clock local
   timer. Baseline: a bare `loop.call_later` of the same delay (the event loop's own timer
   slack).
2. Hook lag at 1,000 events/s: from an event being published (recorded) to a hook handler
   being called, through `LocalHookFanout`. Baseline: calling the same handler inline.

Run: python bench/bench_timers.py. Prints numbers; asserts nothing.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from agentkit import define_hook
from agentkit.events import Event
from agentkit.hooks import LocalHookFanout, NamedHook
from agentkit.sessions import SessionRecord

REMINDERS = 20
DELAY_S = 0.05
EVENTS = 2000
RATE = 1000.0


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def show(name: str, values: list[float], baseline: list[float]) -> None:
    med, base = statistics.median(values), statistics.median(baseline)
    print(
        f"{name:<34} p50 {med * 1000:8.3f} ms  p95 {pct(values, 95) * 1000:8.3f} ms  "
        f"max {max(values) * 1000:8.3f} ms | baseline p50 {base * 1000:7.3f} ms  "
        f"ratio {med / base if base else float('inf'):6.1f}x"
    )


async def baseline_timer() -> list[float]:
    loop = asyncio.get_running_loop()
    out: list[float] = []
    for _ in range(REMINDERS):
        done = asyncio.Event()
        due = time.perf_counter() + DELAY_S

        def wake(due: float = due, done: asyncio.Event = done) -> None:
            out.append(time.perf_counter() - due)
            done.set()

        loop.call_later(DELAY_S, wake)
        await done.wait()
    return out


async def reminder_latency() -> list[float] | None:
    try:
        from agentkit.engine.runtime import AgentRuntime
        from agentkit.project.bundle import AgentBundle
        from agentkit.scheduling.local import LocalScheduling
        from agentkit.store.memory import MemoryStore
    except ImportError as exc:  # the runtime is optional for the hook half
        print(f"reminder latency skipped: {exc}")
        return None
    from agentkit.authoring.contexts import HostServices
    from agentkit.sessions import Principal

    class Stamp:
        """A fanout noting when each reminder's message.received was recorded."""

        def __init__(self) -> None:
            self.seen: dict[str, float] = {}
            self.waiters: dict[str, asyncio.Event] = {}

        def publish(self, session: SessionRecord, events: list[Event]) -> None:
            for e in events:
                if e.type == "message.received" and e.data.get("source") == "reminder":
                    self.seen[session.id] = time.perf_counter()
                    self.waiters.setdefault(session.id, asyncio.Event()).set()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "agent").mkdir()
        (root / "agent" / "instructions.md").write_text("You are a test agent.\n")
        bundle = AgentBundle.discover(root)
        store = MemoryStore()
        stamp = Stamp()
        services = HostServices()
        runtime = AgentRuntime(bundle, store, fanout=stamp, host_services=services)
        scheduling = LocalScheduling(store, runtime, definitions=bundle, host=services)
        out: list[float] = []
        for n in range(REMINDERS):
            accepted = await runtime.start_session(
                "hello", principal=Principal("bench"), channel_id="bench", continuation_key=f"k{n}"
            )
            sid = accepted.session_id
            await _wait_idle(runtime, sid)
            due_wall = scheduling.timer.clock.now() + timedelta(seconds=DELAY_S)
            due = time.perf_counter() + DELAY_S
            stamp.waiters[sid] = asyncio.Event()
            await scheduling.reminders.create(
                purpose="bench",
                channel_id="bench",
                continuation_token=f"k{n}",
                at=due_wall,
                prompt="wake up",
            )
            await asyncio.wait_for(stamp.waiters[sid].wait(), 10)
            out.append(stamp.seen[sid] - due)
            await _wait_idle(runtime, sid)
        await scheduling.aclose()
        return out


async def _wait_idle(runtime: Any, session_id: str) -> None:
    from agentkit.sessions import Principal, SessionStatus, fold_status

    for _ in range(1000):
        events = await runtime.read_events(session_id, principal=Principal("bench", admin=True))
        if fold_status(events) != SessionStatus.RUNNING:
            return
        await asyncio.sleep(0.005)


async def paced(publish: Any) -> float:
    """Publish EVENTS events at RATE per second; returns the rate achieved."""
    start = time.perf_counter()
    for i in range(EVENTS):
        await asyncio.sleep(max(0.0, start + i / RATE - time.perf_counter()))
        publish(Event("message.appended", i, SESSION.id, "2030-01-01T00:00:00Z", {"text": "x"}))
    return EVENTS / (time.perf_counter() - start)


SESSION = SessionRecord(id="ses_" + "b" * 22)


async def hook_lag() -> tuple[list[float], list[float]]:
    published: dict[int, float] = {}
    lags: list[float] = []

    async def handler(event: Event, ctx: Any) -> None:
        lags.append(time.perf_counter() - published[event.index])

    fanout = LocalHookFanout([NamedHook("bench", define_hook(events={"*": handler}))])

    def via_fanout(event: Event) -> None:
        published[event.index] = time.perf_counter()
        fanout.publish(SESSION, [event])

    achieved = await paced(via_fanout)
    await fanout.drain()
    hook_lags = list(lags)
    print(f"hook publish rate achieved: {achieved:,.0f} events/s over {EVENTS} events")

    # Baseline: the cheapest background delivery, a bare task per event with no queue.
    lags.clear()
    tasks: set[asyncio.Task[None]] = set()

    def via_task(event: Event) -> None:
        published[event.index] = time.perf_counter()
        task = asyncio.ensure_future(handler(event, None))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    await paced(via_task)
    await asyncio.gather(*tasks)
    return hook_lags, list(lags)


async def main() -> None:
    print(f"python {sys.version.split()[0]}")
    base = await baseline_timer()
    reminders = await reminder_latency()
    if reminders:
        show("reminder due -> message.received", reminders, base)
    lags, inline = await hook_lag()
    show("event recorded -> hook called", lags, inline)  # baseline: a bare task


if __name__ == "__main__":
    asyncio.run(main())
