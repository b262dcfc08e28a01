"""`agentkit run` and `agentkit trajectory` with the offline test model."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from agentkit.cli import main

from .conftest import write_project

WEATHER = {
    "agent/instructions.md": "You report the weather.\n",
    "agent/tools/get_weather.py": """
        from pydantic import BaseModel
        from agentkit import define_tool

        class WeatherInput(BaseModel):
            city: str

        @define_tool(description="Get the weather for a city.")
        def get_weather(input: WeatherInput, ctx) -> dict:
            return {"city": input.city, "tempC": 21}
    """,
}


def test_run_prints_the_trajectory_and_writes_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTKIT_MODEL", raising=False)
    root = write_project(tmp_path / "weather", WEATHER)
    assert main(["run", "--dir", str(root), "Weather in Paris?"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "test"
    assert [c["toolName"] for c in out["toolCalls"]] == ["get_weather"]
    call = out["toolCalls"][0]
    assert call["isError"] is False and call["result"]["tempC"] == 21
    assert isinstance(call["arguments"]["city"], str)
    assert out["reply"] and out["usage"]["inputTokens"] > 0
    trace = root / ".agentkit" / "traces" / f"{out['sessionId']}.ndjson"
    assert trace.is_file()
    assert main(["trajectory", "--events", str(trace)]) == 0
    assert json.loads(capsys.readouterr().out) == out


def test_run_stops_with_a_clear_message_when_approval_is_needed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTKIT_MODEL", raising=False)
    files = {
        "agent/instructions.md": "You deploy.\n",
        "agent/tools/deploy.py": textwrap.dedent(
            """
            from pydantic import BaseModel
            from agentkit import define_tool

            class DeployInput(BaseModel):
                env: str

            @define_tool(description="Deploy.", needs_approval=True)
            def deploy(input: DeployInput, ctx) -> str:
                return "deployed"
            """
        ),
    }
    root = write_project(tmp_path / "deployer", files)
    assert main(["run", "--dir", str(root), "ship it"]) == 3
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert [a["toolName"] for a in out["approvals"]] == ["deploy"]
    assert "waiting for approval of deploy" in captured.err


def test_trajectory_rejects_a_file_that_is_not_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"type": "turn.started"}\n')
    assert main(["trajectory", "--events", str(bad)]) == 1
    assert "bad.ndjson:1: not an event" in capsys.readouterr().err
    assert main(["trajectory", "--events", str(tmp_path / "missing.ndjson")]) == 1
