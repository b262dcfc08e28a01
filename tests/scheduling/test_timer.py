"""The local timer on a manual clock: deterministic firing with no sleeping."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentkit.scheduling.timer import LocalTimer, ManualClock, reminder_key, split_key


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


async def test_armed_key_fires_once_when_its_instant_passes(clock: ManualClock) -> None:
    fired: list[str] = []

    async def on_fire(key: str) -> None:
        fired.append(key)

    timer = LocalTimer(clock, on_fire)
    await timer.arm("reminder:a", clock.now() + timedelta(minutes=5))
    await clock.advance(timedelta(minutes=4))
    assert fired == []
    await clock.advance(timedelta(minutes=2))
    await clock.advance(timedelta(hours=1))
    assert fired == ["reminder:a"]


async def test_rearming_replaces_the_previous_instant(clock: ManualClock) -> None:
    fired: list[tuple[str, object]] = []

    async def on_fire(key: str) -> None:
        fired.append((key, clock.now()))

    timer = LocalTimer(clock, on_fire)
    await timer.arm("k", clock.now() + timedelta(minutes=1))
    later = clock.now() + timedelta(minutes=10)
    await timer.arm("k", later)
    await clock.advance(timedelta(minutes=20))
    assert fired == [("k", later)]


async def test_disarmed_key_never_fires(clock: ManualClock) -> None:
    fired: list[str] = []

    async def on_fire(key: str) -> None:
        fired.append(key)

    timer = LocalTimer(clock, on_fire)
    await timer.arm("k", clock.now() + timedelta(minutes=1))
    await timer.disarm("k")
    await clock.advance(timedelta(minutes=5))
    assert fired == [] and timer.armed() == {}


async def test_keys_fire_in_time_order_with_the_clock_at_their_instant(clock: ManualClock) -> None:
    seen: list[tuple[str, object]] = []

    async def on_fire(key: str) -> None:
        seen.append((key, clock.now()))

    timer = LocalTimer(clock, on_fire)
    start = clock.now()
    await timer.arm("b", start + timedelta(minutes=2))
    await timer.arm("a", start + timedelta(minutes=1))
    await clock.advance(timedelta(minutes=3))
    assert seen == [("a", start + timedelta(minutes=1)), ("b", start + timedelta(minutes=2))]


async def test_a_failing_handler_does_not_stop_later_keys(clock: ManualClock) -> None:
    seen: list[str] = []

    async def on_fire(key: str) -> None:
        seen.append(key)
        if key == "a":
            raise RuntimeError("boom")

    timer = LocalTimer(clock, on_fire)
    await timer.arm("a", clock.now() + timedelta(seconds=1))
    await timer.arm("b", clock.now() + timedelta(seconds=2))
    await clock.advance(5)
    assert seen == ["a", "b"]


async def test_system_clock_timer_fires_a_past_instant_promptly() -> None:
    import asyncio

    done = asyncio.Event()

    async def on_fire(key: str) -> None:
        done.set()

    timer = LocalTimer(handler=on_fire)
    await timer.arm("k", timer.clock.now() - timedelta(seconds=1))
    await asyncio.wait_for(done.wait(), 5)


def test_timer_keys_round_trip() -> None:
    assert split_key(reminder_key("rem_1")) == ("reminder", "rem_1")
    with pytest.raises(ValueError):
        split_key("other:1")
