"""Reminders and schedules under a pause: a paused session's reminder skips (and records
the skip), and while the agent's kill switch is on, reminders and schedules hold and run
once it is lifted, schedules by their `catch_up` policy. On the manual clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from agentkit.engine.fleet_switch import FileSwitch
from agentkit.scheduling._firing import SKIPPED_PAUSED
from tests.scheduling.conftest import Rig
from tests.scheduling.test_catch_up import START, hourly_project, sessions_of, stop
from tests.scheduling.test_reminders import BOB, PR, pr_session, reminder_messages, settle


async def test_a_paused_sessions_reminder_skips_and_says_so(rig: Rig) -> None:
    sid = await pr_session(rig)
    reminder = await rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, every="10m", prompt="Ping."
    )
    await rig.runtime.pause(sid, principal=BOB)
    await rig.clock.advance(timedelta(minutes=10))
    skipped = await rig.scheduling.reminders.get(reminder.id)
    assert skipped is not None
    assert (skipped.status, skipped.fire_count, skipped.last_error) == (
        "active",
        0,
        SKIPPED_PAUSED,
    )
    assert await reminder_messages(rig, sid) == []

    await rig.runtime.resume(sid, principal=BOB)
    await rig.clock.advance(timedelta(minutes=10))
    await settle(rig, sid)
    assert await reminder_messages(rig, sid) == ["Ping."]


async def test_reminders_hold_while_the_switch_is_on(rig: Rig, tmp_path: Path) -> None:
    sid = await pr_session(rig)
    switch = rig.runtime.ports.switch = FileSwitch(tmp_path / "switch", cache=0.0)
    reminder = await rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, delay="5m", prompt="Wake."
    )
    await switch.set(True, by="ops")
    await rig.clock.advance(timedelta(minutes=5))
    held = await rig.scheduling.reminders.get(reminder.id)
    assert held is not None
    assert (held.status, held.fire_count) == ("active", 0)  # not lost, not delivered
    assert await reminder_messages(rig, sid) == []

    await switch.set(False, by="ops")
    await rig.clock.advance(timedelta(minutes=1))
    await settle(rig, sid)
    assert await reminder_messages(rig, sid) == ["Wake."]


async def test_schedules_hold_while_the_switch_is_on_then_catch_up(
    tmp_path: Path, started: Callable[[Path, object], Rig]
) -> None:
    rig = started(hourly_project(tmp_path / "p", "all"), START)
    switch = FileSwitch(tmp_path / "switch", cache=0.0)
    rig.runtime.ports.switch = switch
    assert rig.scheduling.runner is not None
    rig.scheduling.runner.switch = switch
    try:
        await rig.scheduling.start()
        await switch.set(True, by="ops")
        await rig.clock.advance(timedelta(hours=2))  # 01:00 and 02:00 come while it is on
        assert await sessions_of(rig) == 0
        assert rig.scheduling.runner.held == {"hourly"}

        await switch.set(False, by="ops")
        assert await rig.scheduling.runner.lift() == 1
        assert await sessions_of(rig) == 2  # catch_up "all": both held slots fire
        [listed] = await rig.scheduling.list_schedules()
        assert sorted(m["slot"][11:16] for m in listed["missed"]) == ["01:00", "02:00"]
    finally:
        await stop(rig)
