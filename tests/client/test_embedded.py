"""`agentkit.serve(...)` from a test: the same host as `agentkit serve`, on a free port,
with schedules dispatched and reminders created and fired through the handle."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import agentkit
from agentkit.client import AuthError, Client
from agentkit.events import EventType
from tests.fixtures.http_server import SLUG, free_port, write_agent


@pytest.fixture(autouse=True)
def _test_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTKIT_MODEL", "test")


async def test_serve_on_a_free_port_with_schedules_and_reminders(tmp_path: Path) -> None:
    project = write_agent(tmp_path / SLUG)
    state = tmp_path / "state"
    async with agentkit.serve(project, dev=True, state_root=state, port=0) as handle:
        assert handle.url.startswith("http://127.0.0.1:") and not handle.url.endswith(":0")
        async with handle.client() as client:
            assert {t["name"] for t in (await client.info())["tools"]} >= {"get_weather"}

            fired = await handle.dispatch_schedule("digest")
            [task_id] = fired["sessionIds"]
            task = [e async for e in client.session(task_id).events()]  # ends with the task
            assert task[-1].type == EventType.SESSION_COMPLETED
            received = [e for e in task if e.type == EventType.MESSAGE_RECEIVED]
            assert "yearly digest" in received[0].data["message"]

            session = await client.start("What is the weather in Paris?")
            await session.wait(timeout=60)
            reminder = await handle.create_reminder(
                purpose="recheck",
                channel_id="http",
                continuation_token=f"session:{session.id}",  # HTTP tokens rotate: the key
                delay="2h",
                prompt="Check the weather in Oslo again.",
            )
            assert reminder.session_id == session.id and reminder.status == "active"
            await handle.dispatch_reminder(reminder.id)
            woken = []
            async for event in session.events(start_index=session.next_index):
                woken.append(event)
                if event.type == EventType.TURN_COMPLETED:
                    break
            [wake] = [e for e in woken if e.type == EventType.MESSAGE_RECEIVED]
            assert wake.data["message"] == "Check the weather in Oslo again."
            assert wake.data["source"] == "reminder"
            assert "Oslo" in woken[-1].data["result"]
    # Closed: the port is free again and the state directory's lock released.
    async with httpx.AsyncClient() as probe:
        with pytest.raises(httpx.TransportError):
            await probe.get(f"{handle.url}/v1/health", timeout=5)
    async with (
        agentkit.serve(project, dev=True, state_root=state) as again,
        again.client() as client,
    ):
        listed = [s.session_id async for s in client.sessions()]
        assert session.id in listed and task_id in listed


async def test_serve_with_a_token_and_several_agents(tmp_path: Path) -> None:
    first = write_agent(tmp_path / SLUG)
    second = write_agent(tmp_path / "other")
    async with agentkit.serve(
        first, second, auth_token="secret-1", state_root=tmp_path / "state"
    ) as handle:
        async with handle.client("other") as client:
            session = await client.start("What is the weather in Rome?")
            assert "Rome" in await session.reply_text(timeout=60)
        async with handle.client(SLUG, token="wrong") as intruder:
            with pytest.raises(AuthError):
                await intruder.info()

        def blocking() -> str:  # a blocking client, on a thread of its own
            with handle.sync_client("other") as sync:
                return sync.start("What is the weather in Lima?").reply_text(timeout=60)

        assert "Lima" in await asyncio.to_thread(blocking)
        fired = await handle.dispatch_schedule("digest", agent="other")
        assert len(fired["sessionIds"]) == 1
        with pytest.raises(ValueError, match="several agents"):
            await handle.dispatch_schedule("digest")


def test_serve_forever_runs_until_sigint(tmp_path: Path) -> None:
    project = write_agent(tmp_path / SLUG)
    port = free_port()
    script = (
        "import agentkit, sys; "
        f"agentkit.serve(sys.argv[1], port={port}, state_root=sys.argv[2]).serve_forever()"
    )
    env = dict(os.environ, AGENTKIT_MODEL="test")
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(project), str(tmp_path / "state")], env=env
    )
    try:
        url = f"http://127.0.0.1:{port}/{SLUG}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, "serve_forever exited early"
            try:
                if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "serve_forever did not come up"
            time.sleep(0.05)
        with Client(url) as client:
            assert "Lima" in client.start("What is the weather in Lima?").reply_text(timeout=60)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_a_failed_start_raises_and_leaves_the_program_running(tmp_path: Path) -> None:
    from agentkit.hosts.local import StateDirBusy

    project = write_agent(tmp_path / SLUG)
    state = tmp_path / "state"
    async with agentkit.serve(project, state_root=state) as first, first.client() as client:
        with pytest.raises(StateDirBusy):  # not uvicorn's SystemExit
            async with agentkit.serve(project, state_root=state):
                pass
        assert (await client.info())["tools"]  # the first server still answers


async def test_close_stops_serving_before_the_block_ends(tmp_path: Path) -> None:
    project = write_agent(tmp_path / SLUG)
    async with agentkit.serve(project, state_root=tmp_path / "state") as handle:
        async with handle.client() as client:
            session = await client.start("What is the weather in Oslo?")
            assert "Oslo" in await session.reply_text(timeout=60)
        await handle.close()
        async with httpx.AsyncClient() as probe:
            with pytest.raises(httpx.TransportError):
                await probe.get(f"{handle.url}/v1/health", timeout=5)
    # Leaving the block after an explicit close is fine, and the state is free again.
    async with (
        agentkit.serve(project, state_root=tmp_path / "state") as again,
        again.client() as client,
    ):
        assert session.id in [s.session_id async for s in client.sessions()]
