"""check-deploy's sources on DynamoDB (moto server over HTTP): the store's sessions, and a
host on that store read over its HTTP API, replay on the bundle that made them, and a
broken bundle is caught."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.client import AuthError
from agentkit.engine.runtime import AgentRuntime
from agentkit.project.bundle import AgentBundle
from agentkit.replay import replay_session
from agentkit.replay.sources import host_sessions, store_sessions
from agentkit.server.app import create_app
from agentkit.server.auth import AuthChain
from agentkit.server.options import AgentMount, ServerOptions
from tests.fixtures.project_tree import write_tree
from tests.replay.conftest import FILES, StandIn, record_session


@pytest.fixture
async def on_dynamodb(
    tmp_path: Path,
    standin: StandIn,
    monkeypatch: pytest.MonkeyPatch,
    dynamodb_store_factory: Callable[..., Any],
) -> tuple[Path, Any]:
    monkeypatch.setenv("REPLAY_NOTE_FILE", str(tmp_path / "note.txt"))
    monkeypatch.setenv("REPLAY_STANDIN_URL", standin.url)
    monkeypatch.setenv("REPLAY_HOOK_FILE", str(tmp_path / "hooked.txt"))
    project = write_tree(tmp_path / "trip", FILES)
    store = dynamodb_store_factory()
    await record_session(AgentBundle.discover(project), store, tmp_path / "state")
    return project, store


def renamed(project: Path) -> AgentBundle:
    tools = project / "agent/tools"
    text = (tools / "get_weather.py").read_text().replace("def get_weather", "def fetch_weather")
    (tools / "fetch_weather.py").write_text(text)
    (tools / "get_weather.py").unlink()
    return AgentBundle.discover(project)


async def test_sessions_of_a_dynamodb_store_replay_and_catch_a_rename(
    on_dynamodb: tuple[Path, Any],
) -> None:
    project, store = on_dynamodb
    [session] = await store_sessions(store, 5)
    same = await replay_session(AgentBundle.discover(project), session.events)
    assert same.ok, same.lines()
    broken = await replay_session(renamed(project), session.events)
    assert [d.kind for d in broken.divergences] == ["tool_missing"]


async def test_sessions_read_from_a_host_on_dynamodb_replay(
    on_dynamodb: tuple[Path, Any], tmp_path: Path
) -> None:
    project, store = on_dynamodb
    bundle = AgentBundle.discover(project)
    runtime = AgentRuntime(bundle, store, state_root=tmp_path / "served")
    # An admin token reads every principal's sessions, as a deploy check must.
    auth = AuthChain.from_flags(admin_tokens=["ci-admin-token"])
    app = create_app(
        [AgentMount(slug=bundle.slug, service=runtime)], ServerOptions(mode="single", auth=auth)
    )
    transport = httpx.ASGITransport(app=app)
    url = "http://agent.example"
    with pytest.raises(AuthError):
        await host_sessions(url, "wrong-token", 5, transport=transport)
    [session] = await host_sessions(url, "ci-admin-token", 5, transport=transport)
    assert session.events == await store.read(session.session_id)
    report = await replay_session(bundle, session.events)
    assert report.ok, report.lines()
    assert (await replay_session(renamed(project), session.events)).divergences
