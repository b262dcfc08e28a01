"""`agentkit serve --dev` reloads the agent when files under agent/ change: a turn in
flight finishes on the old code, new turns use the new, sessions are kept, and a folder
with errors leaves the previous code serving."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.hosts.reload import DevReloader
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal
from tests.fixtures.http_server import ServeFactory

LOCAL = Principal("local")

TOOL = """
import asyncio
from pathlib import Path

from pydantic import BaseModel
from agentkit import define_tool


class VersionInput(BaseModel):
    label: str = "x"


@define_tool(description="Say which version of the code runs.")
async def version(input: VersionInput, ctx) -> dict:
    gate = Path({gate!r})
    if gate.parent.joinpath("hold").exists():
        gate.parent.joinpath("entered").write_text("1")
        while not gate.exists():  # held until the test opens the gate
            await asyncio.sleep(0.01)
    return {{"version": {version!r}}}
"""


def _write_tool(project: Path, gates: Path, version: str) -> None:
    path = project / "agent" / "tools" / "version.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TOOL.format(gate=str(gates / "open"), version=version), encoding="utf-8")


def _exists(path: Path) -> bool:
    return path.exists()


async def _wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not _exists(path):
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.01)


@pytest.fixture
async def dev_host(tmp_path: Path) -> AsyncIterator[tuple[LocalHost, Path, Path]]:
    project = tmp_path / "reloading"
    (project / "agent").mkdir(parents=True)
    (project / "agent" / "instructions.md").write_text("Report the version.\n")
    (project / "agent" / "agent.py").write_text(
        'from agentkit import define_agent\n\nagent = define_agent(model="test")\n'
    )
    gates = tmp_path / "gates"
    gates.mkdir()
    _write_tool(project, gates, "v1")
    host = LocalHost(
        AgentBundle.discover(project), LocalHostOptions(state_root=tmp_path / "state", dev=True)
    )
    await host.start()
    try:
        yield host, project, gates
    finally:
        await host.aclose()


def _versions(events: list[Any], turn_id: str) -> list[str]:
    return [
        e.data["result"]["version"]
        for e in events
        if e.type == "action.result" and e.turn_id == turn_id
    ]


async def _drain(host: LocalHost) -> None:
    dispatcher = host.runtime.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    await dispatcher.drain()


async def test_a_turn_in_flight_keeps_the_old_code_and_new_turns_use_the_new(
    dev_host: tuple[LocalHost, Path, Path],
) -> None:
    host, project, gates = dev_host
    reloader = DevReloader([host])
    (gates / "hold").write_text("1")
    first = await host.runtime.start_session("Which version?", principal=LOCAL)
    await _wait_for(gates / "entered")  # the v1 tool is running now

    _write_tool(project, gates, "v2")
    assert reloader.reload_now(host) is True
    (gates / "hold").unlink()
    (gates / "open").write_text("1")
    await _drain(host)

    events = await host.store.read(first.session_id)
    assert _versions(events, first.turn_id) == ["v1"]
    assert events[-1].type == "session.waiting"

    # the same session goes on, on the new code
    second = await host.runtime.follow_up(
        first.session_id, first.continuation_token, "And now?", principal=LOCAL
    )
    await _drain(host)
    events = await host.store.read(first.session_id)
    assert _versions(events, second.turn_id) == ["v2"]


async def test_a_folder_with_errors_keeps_the_previous_code(
    dev_host: tuple[LocalHost, Path, Path],
) -> None:
    host, project, _ = dev_host
    reloader = DevReloader([host])
    (project / "agent" / "tools" / "version.py").write_text("def broken(:\n")
    assert reloader.reload_now(host) is False
    assert reloader.reloads == 0
    accepted = await host.runtime.start_session("Which version?", principal=LOCAL)
    await _drain(host)
    events = await host.store.read(accepted.session_id)
    assert _versions(events, accepted.turn_id) == ["v1"]


@pytest.mark.slow(reason="edits the agent folder and waits for the dev server to reload")
def test_serve_dev_picks_up_an_edited_tool(serve: ServeFactory, agent_project: Path) -> None:
    served = serve("--dev")
    tool = agent_project / "agent" / "tools" / "get_weather.py"
    with httpx.Client(timeout=30) as client:
        before = client.get(f"{served.url}/v1/info").json()
        (described,) = [t for t in before["tools"] if t["name"] == "get_weather"]
        assert described["description"] == "Get the current weather for a city."
        tool.write_text(tool.read_text().replace("Get the current weather", "Look up the weather"))
        deadline = time.monotonic() + 60
        while True:
            info = client.get(f"{served.url}/v1/info").json()
            names = {t["name"]: t["description"] for t in info["tools"]}
            if names["get_weather"].startswith("Look up the weather"):
                break
            assert time.monotonic() < deadline, served.output()
            time.sleep(0.1)
    assert "reloaded helpdesk" in served.output()
