"""Schedules fire through the agent service: on their cadence under serve, by hand in dev."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from agentkit.errors import Conflict, NotFound
from agentkit.sessions import Principal
from tests.scheduling.conftest import Rig

ADMIN = Principal("test", admin=True)


async def test_markdown_schedule_starts_a_task_session_that_completes(dev_rig: Rig) -> None:
    result = await dev_rig.scheduling.dispatch_schedule("heartbeat")
    assert result["scheduleId"] == "heartbeat"
    [session_id] = result["sessionIds"]
    record = await dev_rig.store.get_session(session_id)
    assert record is not None
    assert (record.mode, record.channel_id, record.principal) == (
        "task",
        "schedule",
        "schedule:heartbeat",
    )
    await dev_rig.wait_for(session_id, "session.completed")
    received = next(e for e in await dev_rig.events(session_id) if e.type == "message.received")
    assert received.data["message"].strip() == "Summarize open incidents."
    assert received.data["source"] == "schedule"


async def test_a_schedule_task_session_cannot_be_followed_up(dev_rig: Rig) -> None:
    [session_id] = (await dev_rig.scheduling.dispatch_schedule("heartbeat"))["sessionIds"]
    await dev_rig.wait_for(session_id, "session.completed")
    with pytest.raises(Conflict) as err:
        await dev_rig.runtime.follow_up(session_id, "http:stale", "more", principal=ADMIN)
    assert err.value.code == "not_followable"


async def test_handler_schedule_hands_a_message_into_a_channel(dev_rig: Rig) -> None:
    result = await dev_rig.scheduling.dispatch_schedule("alerts")
    [session_id] = result["sessionIds"]
    record = await dev_rig.store.get_session(session_id)
    assert record is not None
    assert (record.channel_id, record.mode, record.principal) == (
        "webhook",
        "chat",
        "schedule:alerts",
    )
    received = await dev_rig.wait_for(session_id, "message.received")
    assert received.data["message"] == "Check for critical alerts."
    await dev_rig.wait_for(session_id, "turn.completed")


async def test_manual_dispatch_fires_exactly_once(dev_rig: Rig) -> None:
    before = (await dev_rig.store.list_sessions(None)).items
    result = await dev_rig.scheduling.dispatch_schedule("heartbeat")
    after = (await dev_rig.store.list_sessions(None)).items
    assert len(after) == len(before) + 1
    assert {s.id for s in after} - {s.id for s in before} == set(result["sessionIds"])


async def test_unknown_schedule_is_not_found(dev_rig: Rig) -> None:
    with pytest.raises(NotFound):
        await dev_rig.scheduling.dispatch_schedule("nope")


async def test_dev_mode_never_fires_schedules_automatically(dev_rig: Rig) -> None:
    await dev_rig.clock.advance(timedelta(days=7))
    assert (await dev_rig.store.list_sessions(None)).items == []
    assert dev_rig.scheduling.runner is None


async def test_serve_fires_schedules_on_their_cadence_over_a_week(rig: Rig) -> None:
    # The manual clock starts on a Monday at 00:00 UTC.
    await rig.clock.advance(timedelta(days=7))
    runner = rig.scheduling.runner
    assert runner is not None
    heartbeat = [at for sid, at in runner.history if sid == "heartbeat"]
    alerts = [at for sid, at in runner.history if sid == "alerts"]
    assert [at.strftime("%a %H:%M") for at in heartbeat] == [
        "Mon 09:00",
        "Tue 09:00",
        "Wed 09:00",
        "Thu 09:00",
        "Fri 09:00",
    ]
    assert len(alerts) == 7 * 48
    sessions = (await rig.store.list_sessions(None, limit=1000)).items
    assert sum(s.channel_id == "schedule" for s in sessions) == 5
    assert sum(s.channel_id == "webhook" for s in sessions) == 7 * 48


async def test_no_schedules_flag_disables_the_cadence(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agentkit.scheduling.local import LocalScheduling

    rig = Rig(project, tmp_path, dev=False)
    scheduling = LocalScheduling(
        rig.store,
        rig.runtime,
        definitions=rig.bundle,
        dev=False,
        schedules=False,
        clock=rig.clock,
    )
    await scheduling.start()
    await rig.clock.advance(timedelta(days=1))
    assert scheduling.runner is None
    assert (await rig.store.list_sessions(None)).items == []
    await scheduling.aclose()


async def test_missed_firings_are_not_replayed_on_start(project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rig = Rig(project, tmp_path, dev=False)
    # The server "comes up" Monday 09:30: the 09:00 heartbeat is missed, not replayed.
    await rig.clock.advance(timedelta(hours=9, minutes=30))
    await rig.scheduling.start()
    runner = rig.scheduling.runner
    assert runner is not None
    slots = runner.next_slots()
    assert slots["heartbeat"].strftime("%a %H:%M") == "Tue 09:00"
    assert slots["alerts"].strftime("%a %H:%M") == "Mon 10:00"
    await rig.clock.advance(timedelta(minutes=1))
    assert list(runner.history) == []
    await rig.scheduling.aclose()


NUDGE = """
import os

from agentkit import define_schedule


async def nudge(ctx):
    key = os.environ["NUDGE_KEY"]
    await ctx.receive("http", message="Anything new?", auth="alice", continuation_key=key)


schedule = define_schedule(cron="0 8 * * *", run=nudge)
"""


async def test_a_schedule_reaches_an_http_session_by_its_conversation_key(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "agent" / "schedules" / "nudge.py").write_text(NUDGE)
    rig = Rig(project, tmp_path, dev=True)
    await rig.scheduling.start()
    try:
        accepted = await rig.runtime.start_session("hello", principal=Principal("alice"))
        sid = accepted.session_id
        answered = await rig.wait_for(sid, "turn.completed")
        monkeypatch.setenv("NUDGE_KEY", f"session:{sid}")

        result = await rig.scheduling.dispatch_schedule("nudge")

        assert result["sessionIds"] == [sid]
        assert [s.id for s in (await rig.store.list_sessions(None)).items] == [sid]
        nudged = await rig.wait_for(sid, "message.received", after=answered.index)
        assert (nudged.data["message"], nudged.data["source"]) == ("Anything new?", "schedule")
    finally:
        await rig.scheduling.aclose()
