"""An approved call whose process is killed while it runs is never run again (issue: the
`deploy` tool deployed twice). A real child process is killed with SIGKILL mid-call; the
side effect is counted as lines in a file."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from agentkit.engine.turn.ending import IN_DOUBT
from agentkit.events import Event
from agentkit.models.scripted import Step
from agentkit.sessions import SessionStatus, fold_status

from .conftest import settle
from .crash_rig import OWNER, deploys, kill_mid_call, park, runtime, write_project


async def wait_lease_free(state: Path, session_id: str) -> None:
    from agentkit.store.files import FileStore

    store = FileStore(state)
    try:
        deadline = time.monotonic() + 30
        while await store.get_lease(session_id) is not None:
            assert time.monotonic() < deadline, "the dead process's lease never expired"
            await asyncio.sleep(0.05)
    finally:
        await store.close()


def results_of(events: list[Event], call_id: str) -> list[Event]:
    return [e for e in events if e.type == "action.result" and e.data["callId"] == call_id]


async def crash_and_recover(project: Path, state: Path, path: str) -> None:
    sid, turn, token = await park(project, state)
    before = deploys(project)
    await asyncio.to_thread(kill_mid_call, project, state, sid, turn, before)
    assert deploys(project) == before + 1
    await wait_lease_free(state, sid)
    rt = runtime(project, state, [Step.text("after the crash")])
    try:
        if path == "recover":
            await rt.recover()  # the next start
        else:
            await rt.run_turn(sid, turn)  # a retried or duplicate delivery of the turn
            await rt.run_turn(sid, turn)
        await settle(rt)
        events = await rt.store.read(sid)
        assert deploys(project) == before + 1, "the approved call ran again"
        kinds = [e.type for e in events if e.turn_id == turn]
        assert kinds.index("action.started") < kinds.index("action.result")
        (result,) = results_of(events, "d1")
        assert result.data["isError"] is True
        assert result.data["error"] == IN_DOUBT
        assert kinds.count("turn.failed") == 1
        assert fold_status(events) == SessionStatus.IDLE
        # The session is usable afterwards.
        nxt = await rt.follow_up(sid, token, "and now?", principal=OWNER)
        await settle(rt)
        events = await rt.store.read(sid)
        assert "turn.completed" in [e.type for e in events if e.turn_id == nxt.turn_id]
        assert deploys(project) == before + 1
    finally:
        await rt.store.close()


@pytest.mark.parametrize("path", ["recover", "redeliver"])
async def test_an_approved_call_killed_mid_run_is_never_rerun(tmp_path: Path, path: str) -> None:
    project = write_project(tmp_path / "proj")
    await crash_and_recover(project, tmp_path / "state", path)


@pytest.mark.bench
@pytest.mark.timeout(3600)
async def test_one_hundred_kills_run_the_side_effect_once_each(tmp_path: Path) -> None:
    """100 trials of `kill -9` during an approved side-effecting call (deselected by
    default; run with `pytest -m bench`; `AGENTKIT_KILL_TRIALS=10` for a shorter run)."""
    project = write_project(tmp_path / "proj")
    for trial in range(int(os.environ.get("AGENTKIT_KILL_TRIALS", "100"))):
        path = "recover" if trial % 2 else "redeliver"
        await crash_and_recover(project, tmp_path / f"state{trial}", path)
        assert deploys(project) == trial + 1
