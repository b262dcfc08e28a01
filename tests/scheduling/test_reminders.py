"""Reminders wake one conversation: one-shot, recurring, run handlers, restart, cancel."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agentkit import ReminderTick
from agentkit.errors import BadRequest, Conflict, NotFound
from agentkit.models.base import TextDelta
from agentkit.models.scripted import ScriptedModel, Step, delay
from agentkit.scheduling.limits import ReminderLimits
from agentkit.scheduling.local import LocalScheduling
from agentkit.scheduling.reminders import HANDLER_LOST, ReminderService
from agentkit.sessions import Principal
from tests.scheduling.conftest import Rig

PR = "pr:owner/repo#1"
BOB = Principal("bob")


def slow_step() -> Step:
    """A model step that streams for ~30 s, one chunk every 50 ms (interruptible between)."""
    return Step.of(*[part for _ in range(600) for part in (delay(0.05), TextDelta("."))])


async def pr_session(rig: Rig) -> str:
    """A GitHub-like conversation keyed by its PR, idle after its first turn."""
    accepted = await rig.runtime.start_session(
        "Review this PR.", principal=BOB, channel_id="github", continuation_key=PR
    )
    await rig.wait_for(accepted.session_id, "turn.completed")
    return accepted.session_id


async def reminder_messages(rig: Rig, session_id: str) -> list[str]:
    return [
        e.data["message"]
        for e in await rig.events(session_id)
        if e.type == "message.received" and e.data.get("source") == "reminder"
    ]


async def settle(rig: Rig, session_id: str) -> None:
    """Wait until the turn a reminder started has completed."""
    events = await rig.events(session_id)
    last = max(e.index for e in events if e.type == "message.received")
    await rig.wait_for(session_id, "turn.completed", after=last)


async def test_one_shot_prompt_reminder_follows_up_once_when_due(rig: Rig) -> None:
    sid = await pr_session(rig)
    reminder = await rig.scheduling.reminders.create(
        purpose="ci_recheck",
        channel_id="github",
        continuation_token=PR,
        delay="2h",
        prompt="Re-check CI.",
    )
    assert reminder.session_id == sid
    await rig.clock.advance(timedelta(hours=1, minutes=59))
    assert await reminder_messages(rig, sid) == []
    await rig.clock.advance(timedelta(minutes=1))
    await settle(rig, sid)
    await rig.clock.advance(timedelta(days=1))
    assert await reminder_messages(rig, sid) == ["Re-check CI."]
    done = await rig.scheduling.reminders.get(reminder.id)
    assert done is not None and (done.status, done.fire_count) == ("done", 1)


async def test_recurring_reminder_fires_on_every_interval(rig: Rig) -> None:
    sid = await pr_session(rig)
    await rig.scheduling.reminders.create(
        purpose="poll", channel_id="github", continuation_token=PR, every="30m", prompt="Poll."
    )
    for _ in range(3):
        await rig.clock.advance(timedelta(minutes=30))
        await settle(rig, sid)
    assert await reminder_messages(rig, sid) == ["Poll.", "Poll.", "Poll."]


async def test_cron_reminder_fires_on_its_schedule(rig: Rig) -> None:
    sid = await pr_session(rig)
    reminder = await rig.scheduling.reminders.create(
        purpose="daily",
        channel_id="github",
        continuation_token=PR,
        cron="0 9 * * *",
        prompt="Daily check.",
    )
    assert reminder.next_fire_at == "2030-01-07T09:00:00.000Z"
    await rig.clock.advance(timedelta(hours=9))
    await settle(rig, sid)
    assert await reminder_messages(rig, sid) == ["Daily check."]


async def test_until_is_given_to_the_model_with_the_prompt(rig: Rig) -> None:
    sid = await pr_session(rig)
    await rig.scheduling.reminders.create(
        purpose="ci_recheck",
        channel_id="github",
        continuation_token=PR,
        delay="20m",
        prompt="Re-check CI.",
        until="Cancel once CI is green or the PR is merged.",
    )
    await rig.clock.advance(timedelta(minutes=20))
    [message] = await reminder_messages(rig, sid)
    assert message.startswith("Re-check CI.")
    assert "Cancel once CI is green or the PR is merged" in message


async def test_run_handler_stops_itself_after_three_wakes(rig: Rig) -> None:
    sid = await pr_session(rig)
    counts: list[int] = []

    async def recheck(tick: ReminderTick) -> dict[str, str]:
        counts.append(tick.fire_count)
        if tick.fire_count >= 3:
            return {"action": "stop"}
        await tick.followup(message="Re-check CI and report only if the status changed.")
        return {"action": "delivered"}

    reminder = await rig.scheduling.reminders.create(
        purpose="ci_recheck",
        channel_id="github",
        continuation_token=PR,
        every="30m",
        run=recheck,
    )
    for _ in range(6):
        await rig.clock.advance(timedelta(minutes=30))
        if len(await reminder_messages(rig, sid)) == len(counts) and counts[-1] < 3:
            await settle(rig, sid)
    assert counts == [0, 1, 2, 3]
    assert len(await reminder_messages(rig, sid)) == 3
    stopped = await rig.scheduling.reminders.get(reminder.id)
    assert stopped is not None and stopped.status == "done" and stopped.reason == "stopped"


async def test_run_handler_skip_wakes_nobody_and_keeps_the_cadence(rig: Rig) -> None:
    sid = await pr_session(rig)
    ticks: list[int] = []

    def quiet(tick: ReminderTick) -> str:
        ticks.append(tick.fire_count)
        return "skip"

    reminder = await rig.scheduling.reminders.create(
        purpose="quiet", channel_id="github", continuation_token=PR, every="10m", run=quiet
    )
    await rig.clock.advance(timedelta(minutes=30))
    assert ticks == [0, 1, 2]
    assert await reminder_messages(rig, sid) == []
    current = await rig.scheduling.reminders.get(reminder.id)
    assert current is not None and current.status == "active"


async def test_restart_disarms_run_handlers_and_rearms_prompts(
    project: Path, tmp_path: Path
) -> None:
    rig = Rig(project, tmp_path, dev=False)
    await rig.scheduling.start()
    await pr_session(rig)
    run_form = await rig.scheduling.reminders.create(
        purpose="r",
        channel_id="github",
        continuation_token=PR,
        every="1h",
        run=lambda tick: "skip",
    )
    prompt_form = await rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, delay="1h", prompt="Wake."
    )
    await rig.scheduling.aclose()

    # A new process over the same store: the handler only lived in the old one.
    restarted = LocalScheduling(rig.store, rig.runtime, definitions=rig.bundle, clock=rig.clock)
    await restarted.start()
    lost = await restarted.reminders.get(run_form.id)
    kept = await restarted.reminders.get(prompt_form.id)
    assert lost is not None and (lost.status, lost.reason) == ("disarmed", HANDLER_LOST)
    assert kept is not None and kept.status == "active"
    await rig.clock.advance(timedelta(hours=1))
    assert await reminder_messages(rig, kept.session_id or "") == ["Wake."]
    await restarted.aclose()


async def test_cancel_stops_a_reminder_for_good(rig: Rig) -> None:
    sid = await pr_session(rig)
    reminder = await rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, every="5m", prompt="Ping."
    )
    assert await rig.scheduling.reminders.cancel(reminder.id) is True
    assert await rig.scheduling.reminders.cancel(reminder.id) is False
    await rig.clock.advance(timedelta(hours=1))
    assert await reminder_messages(rig, sid) == []
    cancelled = await rig.scheduling.reminders.get(reminder.id)
    assert cancelled is not None and cancelled.status == "cancelled"
    assert [r.id for r in await rig.scheduling.reminders.list(active_only=True)] == []


async def test_list_and_get(rig: Rig) -> None:
    await pr_session(rig)
    made = await rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, delay="5m", prompt="Ping."
    )
    assert [r.id for r in await rig.scheduling.reminders.list()] == [made.id]
    assert await rig.scheduling.reminders.get("rem_missing") is None
    assert await rig.scheduling.reminders.get("../etc") is None


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"delay": "2h"}, "prompt or run"),
        ({"prompt": "x"}, "delay, every, cron or at"),
        ({"prompt": "x", "delay": "2h", "every": "1h"}, "delay, every, cron or at"),
        ({"prompt": "x", "delay": "soon"}, "invalid duration"),
        ({"prompt": "x", "cron": "0 0 * * * *"}, "5 fields"),
        ({"prompt": "x", "at": "tomorrow"}, "invalid time"),
        ({"prompt": "x", "delay": "2h", "colour": "red"}, "invalid reminder options"),
    ],
)
async def test_bad_options_are_a_clear_bad_request(
    rig: Rig, options: dict[str, Any], fragment: str
) -> None:
    base = {"purpose": "p", "channel_id": "github", "continuation_token": PR}
    with pytest.raises(BadRequest, match=fragment):
        await rig.scheduling.reminders.create(**base, **options)


async def test_dev_mode_never_fires_reminders_but_dispatch_does(dev_rig: Rig) -> None:
    sid = await pr_session(dev_rig)
    reminder = await dev_rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, delay="1m", prompt="Wake."
    )
    await dev_rig.clock.advance(timedelta(days=1))
    assert await reminder_messages(dev_rig, sid) == []
    result = await dev_rig.scheduling.dispatch_reminder(reminder.id)
    assert (result["fired"], result["sessionId"]) == (True, sid)
    assert await reminder_messages(dev_rig, sid) == ["Wake."]
    with pytest.raises(Conflict):
        await dev_rig.scheduling.dispatch_reminder(reminder.id)  # one-shot, now done
    with pytest.raises(NotFound):
        await dev_rig.scheduling.dispatch_reminder("rem_unknown")


async def test_reminder_into_a_busy_session_interrupts_the_running_turn(
    project: Path, tmp_path: Path
) -> None:
    model = ScriptedModel([Step.text("hi"), slow_step(), Step.text("woke up")])
    rig = Rig(project, tmp_path, dev=True, model=model)
    sid = await pr_session(rig)
    mark = await rig.store.next_index(sid)  # the follow-up's events come after
    await rig.runtime.follow_up_by_key("github", PR, "Think for a long time.", principal=BOB)
    await rig.wait_for(sid, "step.started", after=mark)
    reminder = await rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, delay="1m", prompt="Wake."
    )
    await rig.scheduling.dispatch_reminder(reminder.id)
    failed = await rig.wait_for(sid, "turn.failed")
    assert failed.data["error"] == "turn interrupted"
    woke = await rig.wait_for(sid, "message.received", after=failed.index)
    assert woke.data == {**woke.data, "message": "Wake.", "source": "reminder"}
    await rig.wait_for(sid, "turn.completed", after=woke.index)


async def test_reminder_into_a_session_that_will_not_settle_is_409_session_busy(
    project: Path, tmp_path: Path
) -> None:
    model = ScriptedModel([Step.text("hi"), slow_step()])
    rig = Rig(project, tmp_path, dev=True, model=model)
    sid = await pr_session(rig)
    mark = await rig.store.next_index(sid)  # the follow-up's events come after
    await rig.runtime.follow_up_by_key("github", PR, "Think for a long time.", principal=BOB)
    await rig.wait_for(sid, "step.started", after=mark)
    rig.runtime.settle_timeout = 0.0  # the running turn gets no time to stop
    reminder = await rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, delay="1m", prompt="Wake."
    )
    with pytest.raises(Conflict) as err:
        await rig.scheduling.dispatch_reminder(reminder.id)
    assert err.value.code == "session_busy"
    still = await rig.scheduling.reminders.get(reminder.id)
    assert still is not None and (still.status, still.fire_count) == ("active", 0)
    await rig.runtime.stop(sid, principal=BOB)
    await rig.wait_for(sid, "turn.failed")


@pytest.mark.parametrize(
    ("busy_retry", "retry_at"),
    [(None, "2030-01-07T00:06:00.000Z"), (timedelta(seconds=20), "2030-01-07T00:05:20.000Z")],
)
async def test_a_busy_session_makes_a_timer_retry_later_without_counting_the_tick(
    project: Path, tmp_path: Path, busy_retry: timedelta | None, retry_at: str
) -> None:
    model = ScriptedModel([Step.text("hi"), slow_step(), Step.text("later")])
    rig = Rig(project, tmp_path, dev=False, model=model)
    if busy_retry is not None:
        rig.scheduling.reminders.limits = ReminderLimits(busy_retry=busy_retry)
    await rig.scheduling.start()
    sid = await pr_session(rig)
    mark = await rig.store.next_index(sid)  # the follow-up's events come after
    await rig.runtime.follow_up_by_key("github", PR, "Think.", principal=BOB)
    await rig.wait_for(sid, "step.started", after=mark)
    rig.runtime.settle_timeout = 0.0  # the running turn gets no time to stop
    reminder = await rig.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, delay="5m", prompt="Wake."
    )
    await rig.clock.advance(timedelta(minutes=5))
    retry = await rig.scheduling.reminders.get(reminder.id)
    assert retry is not None and retry.fire_count == 0
    assert retry.next_fire_at == retry_at
    await rig.runtime.stop(sid, principal=BOB)
    await rig.wait_for(sid, "turn.failed")
    rig.runtime.settle_timeout = 5.0
    await rig.clock.advance(timedelta(minutes=1))
    assert await reminder_messages(rig, sid) == ["Wake."]
    await rig.scheduling.aclose()


def test_reminder_service_is_host_reminders(rig: Rig) -> None:
    assert isinstance(rig.services.reminders, ReminderService)


async def test_prompt_reminders_survive_a_restart_on_the_file_store(
    project: Path, tmp_path: Path
) -> None:
    from agentkit.store.files import FileStore

    state = tmp_path / ".agentkit"
    first = Rig(project, tmp_path, dev=False, store=FileStore(state))
    await first.scheduling.start()
    sid = await pr_session(first)
    reminder = await first.scheduling.reminders.create(
        purpose="p", channel_id="github", continuation_token=PR, delay="1h", prompt="Wake."
    )
    await first.scheduling.aclose()
    await first.store.close()

    # A new process: new store object over the same folder, the clock past the due time.
    second = Rig(project, tmp_path, dev=False, store=FileStore(state), clock=first.clock)
    await second.clock.advance(timedelta(hours=3))
    await second.scheduling.start()
    await second.clock.advance(0)
    assert await reminder_messages(second, sid) == ["Wake."]
    fired = await second.scheduling.reminders.get(reminder.id)
    assert fired is not None and fired.status == "done"
    await settle(second, sid)
    await second.scheduling.aclose()
    await second.store.close()
