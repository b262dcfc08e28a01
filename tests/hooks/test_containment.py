"""A hook's handlers all run, and nothing a handler raises escapes it but cancellation.

`define_hook(events={"turn.completed": a, "*": b})`: when `a` fails, `b` still hears the
event, and each failure is reported on its own. A sync handler calling `sys.exit()` (a
`BaseException`) or raising `KeyboardInterrupt` is one more failure: the event loop, the
fan-out and the AWS stream batch go on.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import pytest

from agentkit import HookContext, define_hook
from agentkit.events import Event
from agentkit.hooks import LocalHookFanout, NamedHook, deliver_to_hooks
from agentkit.sessions import SessionRecord

SESSION = SessionRecord(id="ses_" + "c" * 22, channel_id="http", principal="alice")


def ev(index: int, type_: str) -> Event:
    return Event(
        type=type_, index=index, session_id=SESSION.id, at="2030-01-01T00:00:00.000Z", data={}
    )


def exits(event: Event, ctx: HookContext) -> None:
    sys.exit(3)


def interrupts(event: Event, ctx: HookContext) -> None:
    raise KeyboardInterrupt


async def async_exits(event: Event, ctx: HookContext) -> None:
    raise SystemExit(4)


def raises(event: Event, ctx: HookContext) -> None:
    raise RuntimeError("typed handler broke")


def hook_with(failing: Any, seen: list[tuple[int, str]]) -> NamedHook:
    def every(event: Event, ctx: HookContext) -> None:
        seen.append((event.index, event.type))

    return NamedHook("audit", define_hook(events={"turn.completed": failing, "*": every}))


EVENTS = [ev(0, "turn.started"), ev(1, "turn.completed"), ev(2, "turn.started")]
ALL_SEEN = [(0, "turn.started"), (1, "turn.completed"), (2, "turn.started")]


@pytest.mark.parametrize("failing", [raises, exits, interrupts, async_exits])
async def test_local_fanout_calls_the_wildcard_when_the_typed_handler_fails(
    failing: Any, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[int, str]] = []
    other: list[int] = []

    async def other_hook(event: Event, ctx: HookContext) -> None:
        other.append(event.index)

    fanout = LocalHookFanout(
        [hook_with(failing, seen), NamedHook("other", define_hook(events={"*": other_hook}))]
    )
    with caplog.at_level(logging.ERROR, logger="agentkit.hooks"):
        fanout.publish(SESSION, EVENTS)
        await fanout.drain()
        # The loop is alive and the fan-out still delivers afterwards.
        fanout.publish(SESSION, [ev(3, "turn.completed")])
        await fanout.drain()
    assert seen == [*ALL_SEEN, (3, "turn.completed")]
    assert other == [0, 1, 2, 3]
    failures = [r for r in caplog.records if "handler" in r.getMessage()]
    assert len(failures) == 2  # one per failing call (events 1 and 3), each on its own
    assert all(failing.__name__ in r.getMessage() for r in failures)
    await fanout.close()


async def test_deliver_to_hooks_reports_each_failing_handler_separately() -> None:
    seen: list[tuple[int, str]] = []
    both = NamedHook("both", define_hook(events={"turn.completed": raises, "*": exits}))
    failures = await deliver_to_hooks([both, hook_with(interrupts, seen)], EVENTS)
    assert seen == ALL_SEEN
    by_event = [(f.hook, f.index, f.error.split("(")[0]) for f in failures]
    assert by_event == [
        ("both", 0, "SystemExit"),
        ("both", 1, "RuntimeError"),
        ("both", 1, "SystemExit"),
        ("audit", 1, "KeyboardInterrupt"),
        ("both", 2, "SystemExit"),
    ]


async def test_cancellation_still_stops_a_running_handler() -> None:
    started = asyncio.Event()

    async def waits(event: Event, ctx: HookContext) -> None:
        started.set()
        await asyncio.Event().wait()

    fanout = LocalHookFanout([NamedHook("w", define_hook(events={"*": waits}))])
    fanout.publish(SESSION, [ev(0, "turn.started")])
    await asyncio.wait_for(started.wait(), timeout=30)
    await asyncio.wait_for(fanout.close(), timeout=30)  # cancels; would hang if swallowed
