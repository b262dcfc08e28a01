"""Each hook handler call is bounded by its hook's timeout.

A hung handler (async, or sync in the hooks' own thread pool) is logged as that handler's
failure once its timeout passes, and later events still reach the hook's other handlers and
the other hooks. Hung handlers wait on gates that the tests open at the end; nothing here
asserts how fast anything ran.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator

import pytest

from agentkit import HookContext, define_hook
from agentkit.engine.tools.pool import ToolPool
from agentkit.events import Event
from agentkit.hooks import LocalHookFanout, NamedHook, deliver_to_hooks, hook_pool
from agentkit.sessions import SessionRecord

SESSION = SessionRecord(id="ses_" + "t" * 22, channel_id="http", principal="alice")
SHORT = 0.2  # the hung handler's timeout: long enough for a handler that returns at once


def ev(index: int, type_: str = "turn.completed") -> Event:
    return Event(
        type=type_, index=index, session_id=SESSION.id, at="2030-01-01T00:00:00.000Z", data={}
    )


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Holds hung sync handlers; opened at teardown so their threads return."""
    gate = threading.Event()
    yield gate
    gate.set()


def hooks_with_hung(hung: object, seen: list[tuple[str, int]]) -> list[NamedHook]:
    def every(event: Event, ctx: HookContext) -> None:
        seen.append(("every", event.index))

    async def other(event: Event, ctx: HookContext) -> None:
        seen.append(("other", event.index))

    return [
        NamedHook("slow", define_hook(events={"turn.completed": hung, "*": every}, timeout=SHORT)),
        NamedHook("other", define_hook(events={"*": other})),
    ]


def test_define_hook_takes_a_timeout() -> None:
    def h(event: Event, ctx: HookContext) -> None: ...

    assert define_hook(events={"*": h}).timeout == 30.0
    assert define_hook(events={"*": h}, timeout=2).timeout == 2.0
    for bad in (0, -1, True, "5"):
        with pytest.raises(ValueError, match="timeout"):
            define_hook(events={"*": h}, timeout=bad)  # type: ignore[arg-type]


async def test_hung_async_handler_times_out_and_later_events_flow(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def hangs(event: Event, ctx: HookContext) -> None:
        await asyncio.Event().wait()

    seen: list[tuple[str, int]] = []
    with caplog.at_level(logging.ERROR, logger="agentkit.hooks"):
        failures = await deliver_to_hooks(hooks_with_hung(hangs, seen), [ev(0), ev(1)])
    assert sorted(seen) == [("every", 0), ("every", 1), ("other", 0), ("other", 1)]
    assert [(f.hook, f.index) for f in failures] == [("slow", 0), ("slow", 1)]
    assert all("timed out after 0.2s" in f.error for f in failures)
    assert sum("hangs" in r.getMessage() for r in caplog.records) == 2


async def test_hung_sync_handler_is_abandoned_and_counted(gate: threading.Event) -> None:
    def hangs(event: Event, ctx: HookContext) -> None:
        gate.wait(timeout=120)

    pool = hook_pool()
    before = pool.busy
    seen: list[tuple[str, int]] = []
    failures = await deliver_to_hooks(hooks_with_hung(hangs, seen), [ev(0), ev(1)])
    assert sorted(seen) == [("every", 0), ("every", 1), ("other", 0), ("other", 1)]
    assert [f.index for f in failures] == [0, 1]
    assert pool.busy >= before + 2  # the abandoned threads are still counted
    gate.set()
    for _ in range(600):  # they return once the gate opens
        if pool.busy <= before:
            break
        await asyncio.sleep(0.05)
    assert pool.busy <= before


async def test_local_fanout_goes_past_a_hung_sync_handler(gate: threading.Event) -> None:
    def hangs(event: Event, ctx: HookContext) -> None:
        gate.wait(timeout=120)

    seen: list[tuple[str, int]] = []
    fanout = LocalHookFanout(hooks_with_hung(hangs, seen))
    fanout.publish(SESSION, [ev(0), ev(1), ev(2, "turn.started")])
    await asyncio.wait_for(fanout.drain(), timeout=60)
    assert [s for s in seen if s[0] == "every"] == [("every", 0), ("every", 1), ("every", 2)]
    assert [s for s in seen if s[0] == "other"] == [("other", 0), ("other", 1), ("other", 2)]
    await fanout.close()


async def test_a_full_hook_pool_refuses_instead_of_queueing(
    gate: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentkit.hooks as hooks_module

    monkeypatch.setattr(hooks_module, "_POOL", ToolPool(1, label="hook"))

    def hangs(event: Event, ctx: HookContext) -> None:
        gate.wait(timeout=120)

    seen: list[tuple[str, int]] = []
    # A long timeout for "every": were it queued behind the hung thread it would wait
    # for the gate; refused, it fails at once and the other hook still hears the event.
    failures = await deliver_to_hooks(hooks_with_hung(hangs, seen), [ev(0), ev(1)])
    assert [(f.index, "saturated" in f.error) for f in failures] == [
        (0, False),  # timed out, thread abandoned
        (0, True),
        (1, True),
        (1, True),
    ]
    assert seen == [("other", 0), ("other", 1)]
    assert "hook pool saturated" in failures[1].error
