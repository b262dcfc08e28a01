"""The pr-review example's `remind_me` tool: an agent scheduling its own wake-up."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from agentkit.sessions import Principal
from tests.conftest import REPO_ROOT
from tests.scheduling.conftest import Rig

TOOL = REPO_ROOT / "examples" / "pr-review" / "agent" / "tools" / "remind_me.py"
PR = "pr:owner/repo#7"
BOB = Principal("bob")


@pytest.fixture
async def tool_rig(project: Path, tmp_path: Path) -> AsyncIterator[Rig]:
    (project / "agent" / "tools").mkdir()
    shutil.copy(TOOL, project / "agent" / "tools" / "remind_me.py")
    rig = Rig(project, tmp_path, dev=False)
    await rig.scheduling.start()
    yield rig
    await rig.scheduling.aclose()


async def test_remind_me_wakes_the_same_conversation_after_the_delay(tool_rig: Rig) -> None:
    rig = tool_rig
    accepted = await rig.runtime.start_session(
        "Watch CI.", principal=BOB, channel_id="github", continuation_key=PR
    )
    sid = accepted.session_id
    await rig.wait_for(sid, "turn.completed")
    outcome = await rig.runtime.call_tool(
        "remind_me", {"delay": "20m", "prompt": "Check CI again."}, principal=BOB, session_id=sid
    )
    assert not outcome.is_error, outcome.result
    assert outcome.result["nextFireAt"] == "2030-01-07T00:20:00.000Z"
    reminder = await rig.scheduling.reminders.get(outcome.result["reminderId"])
    assert reminder is not None and reminder.purpose == "user_follow_up"

    await rig.clock.advance(timedelta(minutes=20))
    messages = [
        e.data["message"]
        for e in await rig.events(sid)
        if e.type == "message.received" and e.data.get("source") == "reminder"
    ]
    assert messages == ["Check CI again."]


async def test_remind_me_refuses_a_session_without_a_continuation_key(tool_rig: Rig) -> None:
    rig = tool_rig
    # A channel session started with no key cannot be found again (HTTP sessions can: their
    # key is `session:<id>`, see test_http_reminders).
    accepted = await rig.runtime.start_session("Hello.", principal=BOB, channel_id="webhook")
    await rig.wait_for(accepted.session_id, "turn.completed")
    outcome = await rig.runtime.call_tool(
        "remind_me",
        {"delay": "20m", "prompt": "Later."},
        principal=BOB,
        session_id=accepted.session_id,
    )
    assert outcome.is_error
    assert "cannot receive reminder follow-ups" in str(outcome.result)


async def test_remind_me_says_when_the_host_has_no_reminders(tool_rig: Rig) -> None:
    rig = tool_rig
    rig.services.reminders = None
    accepted = await rig.runtime.start_session(
        "Watch CI.", principal=BOB, channel_id="github", continuation_key=PR
    )
    await rig.wait_for(accepted.session_id, "turn.completed")
    outcome = await rig.runtime.call_tool(
        "remind_me", {"delay": "20m", "prompt": "x"}, principal=BOB, session_id=accepted.session_id
    )
    assert outcome.is_error
    assert "Reminders are disabled on this host." in str(outcome.result)


async def test_remind_me_rejects_a_bad_delay_as_a_tool_error(tool_rig: Rig) -> None:
    rig = tool_rig
    accepted = await rig.runtime.start_session(
        "Watch CI.", principal=BOB, channel_id="github", continuation_key=PR
    )
    await rig.wait_for(accepted.session_id, "turn.completed")
    outcome = await rig.runtime.call_tool(
        "remind_me", {"delay": "soon", "prompt": "x"}, principal=BOB, session_id=accepted.session_id
    )
    assert outcome.is_error
    assert "invalid duration" in str(outcome.result)
