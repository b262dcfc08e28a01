"""Reminders in plain HTTP chat sessions, whose continuation token rotates on every follow-up.

End to end on the real runtime and the file store with a manual clock: the conversation is
named by a stable, host-internal key (`session:<id>`), which is no credential, and the
reminder reaches the session however often its token has rotated.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agentkit.errors import BadRequest, Conflict
from agentkit.models.base import TextDelta
from agentkit.models.scripted import ScriptedModel, Step, call, delay
from agentkit.sessions import Principal
from agentkit.store.files import FileStore
from tests.conftest import REPO_ROOT
from tests.scheduling.conftest import Rig

TOOL = REPO_ROOT / "examples" / "pr-review" / "agent" / "tools" / "remind_me.py"
BOB = Principal("bob")


def slow_step() -> Step:
    """A model step that streams for ~30 s, one chunk every 50 ms (interruptible between)."""
    return Step.of(*[part for _ in range(600) for part in (delay(0.05), TextDelta("."))])


class HttpRig:
    """A rig on the file store with the pr-review `remind_me` tool installed."""

    def __init__(self, project: Path, tmp: Path) -> None:
        (project / "agent" / "tools").mkdir(exist_ok=True)
        shutil.copy(TOOL, project / "agent" / "tools" / "remind_me.py")
        self.project = project
        self.tmp = tmp
        self.rigs: list[Rig] = []

    async def make(self, steps: list[Step], *, dev: bool = False) -> Rig:
        rig = Rig(
            self.project,
            self.tmp,
            dev=dev,
            model=ScriptedModel(steps),
            store=FileStore(self.tmp / ".agentkit"),
        )
        await rig.scheduling.start()
        self.rigs.append(rig)
        return rig

    async def aclose(self) -> None:
        for rig in self.rigs:
            await rig.scheduling.aclose()
            await rig.store.close()


@pytest.fixture
async def http(project: Path, tmp_path: Path) -> AsyncIterator[HttpRig]:
    made = HttpRig(project, tmp_path)
    yield made
    await made.aclose()


async def chat(rig: Rig, message: str = "Hello.") -> tuple[str, str]:
    """An HTTP chat session, idle after its first turn: (session id, current token)."""
    accepted = await rig.runtime.start_session(message, principal=BOB)
    await rig.wait_for(accepted.session_id, "turn.completed")
    return accepted.session_id, accepted.continuation_token


async def reminder_wakes(rig: Rig, session_id: str) -> list[Any]:
    return [
        e
        for e in await rig.events(session_id)
        if e.type == "message.received" and e.data.get("source") == "reminder"
    ]


async def test_remind_me_in_an_http_chat_wakes_it_after_the_token_rotated(http: HttpRig) -> None:
    rig = await http.make(
        [
            Step.tool_calls(call("remind_me", {"delay": "20m", "prompt": "Check the build."})),
            Step.text("I will check back in 20 minutes."),
            Step.text("You're welcome."),
            Step.text("The build is green now."),
        ]
    )
    accepted = await rig.runtime.start_session("Remind me to check the build.", principal=BOB)
    sid = accepted.session_id
    result = await rig.wait_for(sid, "action.result")
    assert result.data["isError"] is False, result.data
    await rig.wait_for(sid, "turn.completed")
    reminder = await rig.scheduling.reminders.get(result.data["result"]["reminderId"])
    assert reminder is not None
    assert (reminder.channel_id, reminder.session_id) == ("http", sid)
    assert reminder.continuation_token == f"session:{sid}"

    # An ordinary follow-up rotates the token; the old one no longer works.
    mark = await rig.store.next_index(sid)  # the follow-up's events come after
    again = await rig.runtime.follow_up(sid, accepted.continuation_token, "Thanks!", principal=BOB)
    assert again.continuation_token != accepted.continuation_token
    thanked = await rig.wait_for(sid, "message.received", after=mark)
    await rig.wait_for(sid, "turn.completed", after=thanked.index)

    await rig.clock.advance(timedelta(minutes=20))
    [woke] = await reminder_wakes(rig, sid)
    assert woke.data["message"] == "Check the build."
    done = await rig.wait_for(sid, "turn.completed", after=woke.index)
    assert done.index > woke.index
    fired = await rig.scheduling.reminders.get(reminder.id)
    assert fired is not None and (fired.status, fired.fire_count) == ("done", 1)


async def test_the_http_conversation_key_is_not_a_continuation_token(http: HttpRig) -> None:
    rig = await http.make([Step.text("hi")])
    sid, _token = await chat(rig)
    with pytest.raises(Conflict) as err:
        await rig.runtime.follow_up(sid, f"session:{sid}", "Let me in.", principal=BOB)
    assert err.value.code == "stale_token"


async def test_a_reminder_bound_by_session_key_survives_a_restart(http: HttpRig) -> None:
    first = await http.make([Step.text("hi")])
    sid, _token = await chat(first)
    reminder = await first.scheduling.reminders.create(
        purpose="p",
        channel_id="http",
        continuation_token=f"session:{sid}",
        delay="10m",
        prompt="Wake.",
    )
    await first.scheduling.aclose()

    # A new process over the same folder; (the project's half-hourly schedule stays quiet).
    second = await http.make([Step.text("awake")])
    await second.clock.advance(timedelta(minutes=15))
    [woke] = await reminder_wakes(second, sid)
    assert woke.data["message"] == "Wake."
    await second.wait_for(sid, "turn.completed", after=woke.index)
    assert reminder.id == (await second.scheduling.reminders.list())[0].id


async def test_an_http_reminder_into_a_busy_session_interrupts_the_running_turn(
    http: HttpRig,
) -> None:
    rig = await http.make([Step.text("hi"), slow_step(), Step.text("woke up")], dev=True)
    sid, token = await chat(rig)
    mark = await rig.store.next_index(sid)  # the follow-up's events come after
    await rig.runtime.follow_up(sid, token, "Think for a long time.", principal=BOB)
    await rig.wait_for(sid, "step.started", after=mark)
    reminder = await rig.scheduling.reminders.create(
        purpose="p",
        channel_id="http",
        continuation_token=f"session:{sid}",
        delay="1m",
        prompt="Wake.",
    )
    await rig.scheduling.dispatch_reminder(reminder.id)
    failed = await rig.wait_for(sid, "turn.failed")
    assert failed.data["error"] == "turn interrupted"
    woke = await rig.wait_for(sid, "message.received", after=failed.index)
    assert (woke.data["message"], woke.data["source"]) == ("Wake.", "reminder")
    await rig.wait_for(sid, "turn.completed", after=woke.index)


async def test_a_busy_http_session_makes_the_timer_retry_without_counting_the_tick(
    http: HttpRig,
) -> None:
    rig = await http.make([Step.text("hi"), slow_step(), Step.text("later")])
    sid, token = await chat(rig)
    mark = await rig.store.next_index(sid)  # the follow-up's events come after
    await rig.runtime.follow_up(sid, token, "Think.", principal=BOB)
    await rig.wait_for(sid, "step.started", after=mark)
    rig.runtime.settle_timeout = 0.0  # the running turn gets no time to stop
    reminder = await rig.scheduling.reminders.create(
        purpose="p",
        channel_id="http",
        continuation_token=f"session:{sid}",
        delay="5m",
        prompt="Wake.",
    )
    await rig.clock.advance(timedelta(minutes=5))
    retry = await rig.scheduling.reminders.get(reminder.id)
    assert retry is not None and (retry.status, retry.fire_count) == ("active", 0)
    assert await reminder_wakes(rig, sid) == []

    await rig.runtime.stop(sid, principal=BOB)
    await rig.wait_for(sid, "turn.failed")
    rig.runtime.settle_timeout = 5.0
    await rig.clock.advance(timedelta(minutes=1))
    [woke] = await reminder_wakes(rig, sid)
    await rig.wait_for(sid, "turn.completed", after=woke.index)


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("http:not-the-way", "not a continuation token"),
        ("session:ses_" + "x" * 22, "no HTTP session"),
    ],
)
async def test_an_http_reminder_needs_the_key_of_an_existing_session(
    http: HttpRig, token: str, problem: str
) -> None:
    rig = await http.make([])
    with pytest.raises(BadRequest) as err:
        await rig.scheduling.reminders.create(
            purpose="p", channel_id="http", continuation_token=token, delay="1m", prompt="x"
        )
    assert problem in str(err.value)
