"""Local hook fan-out: observe-only, ordered per session, never fatal, never blocking."""

from __future__ import annotations

import asyncio
from typing import Any

from agentkit import HookContext, SessionInfo, define_hook
from agentkit.events import Event
from agentkit.hooks import LocalHookFanout, NamedHook, deliver_to_hooks
from agentkit.sessions import SessionRecord

SESSION = SessionRecord(id="ses_" + "a" * 22, channel_id="http", principal="alice")
OTHER = SessionRecord(id="ses_" + "b" * 22, channel_id="slack", continuation_key="t:1")


def ev(index: int, type_: str = "message.appended", session: SessionRecord = SESSION) -> Event:
    return Event(
        type=type_,
        index=index,
        session_id=session.id,
        at="2030-01-01T00:00:00.000Z",
        data={"text": str(index)},
    )


def recorder(seen: list[Any]) -> Any:
    async def handler(event: Event, ctx: HookContext) -> None:
        seen.append((ctx.session.id, event.index, event.type))

    return handler


async def test_each_hook_sees_a_sessions_events_in_index_order() -> None:
    seen: list[Any] = []
    fanout = LocalHookFanout([NamedHook("all", define_hook(events={"*": recorder(seen)}))])
    fanout.publish(SESSION, [ev(0), ev(1)])
    fanout.publish(SESSION, [ev(3), ev(2)])  # publishes may interleave
    fanout.publish(OTHER, [ev(0, session=OTHER)])
    await fanout.drain()
    mine = [i for s, i, _ in seen if s == SESSION.id]
    assert mine == [0, 1, 2, 3]
    assert (OTHER.id, 0, "message.appended") in seen


async def test_handlers_match_by_type_or_wildcard() -> None:
    typed: list[Any] = []
    every: list[Any] = []
    hook = define_hook(events={"turn.completed": recorder(typed), "*": recorder(every)})
    fanout = LocalHookFanout([NamedHook("h", hook)])
    fanout.publish(SESSION, [ev(0, "turn.started"), ev(1, "turn.completed")])
    await fanout.drain()
    assert [t for _, _, t in typed] == ["turn.completed"]
    assert [t for _, _, t in every] == ["turn.started", "turn.completed"]


async def test_a_failing_hook_affects_neither_others_nor_its_own_later_events() -> None:
    seen: list[Any] = []
    boom_calls: list[int] = []

    async def boom(event: Event, ctx: HookContext) -> None:
        boom_calls.append(event.index)
        raise RuntimeError("hook bug")

    fanout = LocalHookFanout(
        [
            NamedHook("bad", define_hook(events={"*": boom})),
            NamedHook("good", define_hook(events={"*": recorder(seen)})),
        ]
    )
    fanout.publish(SESSION, [ev(0), ev(1)])
    await fanout.drain()
    assert boom_calls == [0, 1]
    assert [i for _, i, _ in seen] == [0, 1]


async def test_hooks_get_read_only_session_facts() -> None:
    got: list[HookContext] = []

    def sync_handler(event: Event, ctx: HookContext) -> None:
        got.append(ctx)

    fanout = LocalHookFanout([NamedHook("h", define_hook(events={"*": sync_handler}))])
    fanout.publish(OTHER, [ev(0, session=OTHER)])
    await fanout.drain()
    info = got[0].session
    assert (info.id, info.channel_id, info.continuation_key) == (OTHER.id, "slack", "t:1")
    try:
        info.id = "x"  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("session info must be read-only")


async def test_publish_returns_before_a_slow_hook_runs() -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(event: Event, ctx: HookContext) -> None:
        started.set()
        await release.wait()

    fanout = LocalHookFanout([NamedHook("slow", define_hook(events={"*": slow}))])
    fanout.publish(SESSION, [ev(0)])  # synchronous: nothing ran yet
    assert not started.is_set()
    await started.wait()
    release.set()
    await fanout.drain()


async def test_a_slow_hook_does_not_delay_another_hook() -> None:
    fast_seen: list[Any] = []

    async def slow(event: Event, ctx: HookContext) -> None:
        await asyncio.sleep(5)

    fanout = LocalHookFanout(
        [
            NamedHook("slow", define_hook(events={"*": slow})),
            NamedHook("fast", define_hook(events={"*": recorder(fast_seen)})),
        ]
    )
    fanout.publish(SESSION, [ev(0), ev(1)])
    for _ in range(50):
        if len(fast_seen) == 2:
            break
        await asyncio.sleep(0)
    assert [i for _, i, _ in fast_seen] == [0, 1]
    await fanout.close()


async def test_events_are_delivered_once_even_if_published_twice() -> None:
    seen: list[Any] = []
    fanout = LocalHookFanout([NamedHook("h", define_hook(events={"*": recorder(seen)}))])
    fanout.publish(SESSION, [ev(0), ev(1)])
    fanout.publish(SESSION, [ev(1)])
    await fanout.drain()
    assert [i for _, i, _ in seen] == [0, 1]


async def test_deliver_to_hooks_isolates_failures_and_reports_them() -> None:
    seen: list[Any] = []

    async def boom(event: Event, ctx: HookContext) -> None:
        raise ValueError("nope")

    hooks = [
        NamedHook("bad", define_hook(events={"turn.failed": boom})),
        NamedHook("good", define_hook(events={"*": recorder(seen)})),
    ]
    failures = await deliver_to_hooks(
        hooks,
        [ev(0, "turn.started"), ev(1, "turn.failed")],
        sessions={SESSION.id: SessionInfo(id=SESSION.id, channel_id="http")},
    )
    assert [(f.hook, f.index, f.event_type) for f in failures] == [("bad", 1, "turn.failed")]
    assert [i for _, i, _ in seen] == [0, 1]


async def test_close_drops_the_queue_even_when_the_running_delivery_ends_as_it_is_cancelled() -> (
    None
):
    """A handler that finishes in the very step the fan-out closes (a Slack post returning as
    the host shuts down) can swallow the cancellation (`asyncio.wait_for` on 3.11 returns the
    finished result instead of raising). Close must still drop the queued events: the host
    used to drain every one of them then, each a Web API call to a server already gone."""
    seen: list[int] = []
    closing: list[asyncio.Task[None]] = []
    fanout = LocalHookFanout([])

    async def closes_on_first(event: Event, ctx: HookContext) -> None:
        seen.append(event.index)
        if not closing:
            closing.append(asyncio.create_task(fanout.close()))

    fanout.replace_hooks([NamedHook("h", define_hook(events={"*": closes_on_first}))])
    fanout.publish(SESSION, [ev(i) for i in range(50)])
    for _ in range(1000):  # a few loop steps: the first delivery starts the close
        if closing:
            break
        await asyncio.sleep(0)
    await closing[0]
    assert seen == [0]
    fanout.publish(SESSION, [ev(50)])  # closed: nothing more is taken
    await fanout.drain()
    assert seen == [0]
