"""Which model runs: AGENTKIT_MODEL (SAM's ModelId on AWS) above the agent file, on both
hosts, and `agentkit run --model` above both."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from agentkit.aws.host import AwsHost
from agentkit.aws.settings import AwsSettings
from agentkit.cli import main
from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.models import agent_model_id
from agentkit.project.build import build_project
from agentkit.project.bundle import AgentBundle
from tests.fixtures.http_server import AGENT_FILES, ServeFactory, write_agent
from tests.server.helpers import read_stream, start_session, turn_ends

FILE_MODEL = "anthropic:claude-sonnet-4-5"


def _project(root: Path) -> Path:
    files = dict(AGENT_FILES)
    files["agent/agent.py"] = (
        f'from agentkit import define_agent\n\nagent = define_agent(model="{FILE_MODEL}")\n'
    )
    return write_agent(root, files)


def test_the_environment_wins_over_the_agent_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTKIT_MODEL", "openai:gpt-4o")
    assert agent_model_id(FILE_MODEL) == "openai:gpt-4o"
    monkeypatch.setenv("AGENTKIT_MODEL", "  ")
    assert agent_model_id(FILE_MODEL) == FILE_MODEL
    monkeypatch.delenv("AGENTKIT_MODEL")
    assert agent_model_id(FILE_MODEL) == FILE_MODEL
    assert agent_model_id(None) is None


@pytest.mark.parametrize("env", ["test", None])
def test_local_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str | None) -> None:
    if env is None:
        monkeypatch.delenv("AGENTKIT_MODEL", raising=False)
    else:
        monkeypatch.setenv("AGENTKIT_MODEL", env)
    bundle = AgentBundle.discover(_project(tmp_path / "helpdesk"))
    host = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state", dev=True))
    assert host.runtime.model().id == (env or FILE_MODEL)


@pytest.mark.parametrize("env", ["test", None])
def test_aws_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str | None) -> None:
    if env is None:
        monkeypatch.delenv("AGENTKIT_MODEL", raising=False)
    else:
        monkeypatch.setenv("AGENTKIT_MODEL", env)
    build_project(_project(tmp_path / "helpdesk"), tmp_path / "build")
    settings = AwsSettings(
        sessions_table="s",
        events_table="e",
        region="us-east-1",
        build_dir=tmp_path / "build",
        turn_function="agentkit-turn",
    )
    host = AwsHost(settings, bundle=AgentBundle.load_built(tmp_path / "build"))
    assert host.runtime.model().id == (env or FILE_MODEL)


def test_agentkit_run_model_flag_wins_over_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGENTKIT_MODEL", "openai:gpt-4o")
    root = _project(tmp_path / "helpdesk")
    assert main(["run", "--dir", str(root), "--model", "test", "Weather in Oslo?"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "test"


@pytest.fixture
def agent_project(tmp_path: Path) -> Path:
    return _project(tmp_path / "helpdesk")


@pytest.mark.slow(reason="runs the CLI in subprocesses")
def test_agentkit_serve_runs_the_environment_model(serve: ServeFactory) -> None:
    # The agent file names a provider with no key here; AGENTKIT_MODEL=test must win, or
    # the turn would fail.
    served = serve(env={"AGENTKIT_MODEL": "test", "ANTHROPIC_API_KEY": ""})
    with httpx.Client(timeout=30) as client:
        started = start_session(client, served.url, "Weather in Oslo?")
        events = read_stream(client, served.url, started["sessionId"], until=turn_ends())
    (turn,) = [e for e in events if e["type"] == "turn.started"]
    assert turn["data"]["model"] == "test"
    assert events[-1]["type"] == "turn.completed"
