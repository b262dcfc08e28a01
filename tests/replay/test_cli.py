"""`agentkit replay` and `agentkit check-deploy` on a recorded state folder."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from agentkit.cli import main
from tests.replay.conftest import Recorded


def events_file(recorded: Recorded) -> Path:
    [path] = (recorded.state / "sessions").glob("*/events.ndjson")
    return path


def without_weather(p: Path) -> None:
    (p / "agent/tools/get_weather.py").unlink()


def test_replay_exits_0_when_nothing_diverges(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["replay", "--events", str(events_file(recorded)), "--dir", str(recorded.project)])
    assert code == 0
    assert "no divergence" in capsys.readouterr().out


def test_replay_exits_1_with_each_divergence_at_its_index(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    new = recorded.variant("no-weather", without_weather)
    code = main(["replay", "--events", str(events_file(recorded)), "--dir", str(new.root)])
    assert code == 1
    out = capsys.readouterr().out
    assert f"event {recorded.requested('c_weather')}: tool_missing: tool 'get_weather'" in out


def test_replay_json_is_the_documented_report(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    new = recorded.variant("no-weather", without_weather)
    args = ["replay", "--events", str(events_file(recorded)), "--dir", str(new.root), "--json"]
    assert main(args) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["mode"] == "cassette"
    assert report["sessionId"] == recorded.events[0].session_id
    assert (report["turns"], report["calls"], report["served"]) == (1, 5, 3)
    [d] = report["divergences"]
    assert d == {
        "index": recorded.requested("c_weather"),
        "kind": "tool_missing",
        "reason": "tool 'get_weather' is not in the new bundle",
        "tool": "get_weather",
        "callId": "c_weather",
        "replayIndex": d["replayIndex"],
    }


def test_replay_refuses_a_file_that_is_not_an_event_stream(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"hello": 1}\n')
    assert main(["replay", "--events", str(bad), "--dir", str(recorded.project)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_check_deploy_passes_an_unchanged_bundle(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check-deploy", "--dir", str(recorded.project), "--state-root", str(recorded.state)]
    assert main(args) == 0
    assert "1 session(s) replayed, 0 diverged" in capsys.readouterr().out


def test_check_deploy_fails_a_bundle_that_breaks_a_recorded_session(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    new = recorded.variant("no-guide", lambda p: shutil.rmtree(p / "agent/subagents"))
    args = ["check-deploy", "--dir", str(new.root), "--state-root", str(recorded.state)]
    args += ["--last", "5", "--json"]
    assert main(args) == 1
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is False
    [session] = body["sessions"]
    assert [d["kind"] for d in session["divergences"]] == ["subagent_missing"]


def test_check_deploy_says_when_the_state_folder_has_no_sessions(
    recorded: Recorded, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check-deploy", "--dir", str(recorded.project), "--state-root", str(tmp_path / "x")]
    assert main(args) == 1
    assert "holds no sessions" in capsys.readouterr().err


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_check_deploy_runs_the_check_on_a_state_folder(recorded: Recorded) -> None:
    def make(project: Path) -> subprocess.CompletedProcess[str]:
        venv = ROOT / ".venv"
        where = [f"VENV={venv}", f"CHECK_DIR={project}", f"STATE_ROOT={recorded.state}"]
        # (-o: the venv is there already; never reinstall it from a test)
        return subprocess.run(
            [
                "make",
                "-s",
                "-C",
                str(ROOT),
                "-o",
                str(venv / "bin/agentkit"),
                "check-deploy",
                *where,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )

    ok = make(recorded.project)
    assert ok.returncode == 0, ok.stderr
    assert "0 diverged" in ok.stdout
    broken = make(recorded.variant("no-weather", without_weather).root)
    assert broken.returncode != 0
    assert "tool_missing" in broken.stdout


def test_replay_with_a_model_asks_it_afresh(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["replay", "--events", str(events_file(recorded)), "--dir", str(recorded.project)]
    # The test model plans its own calls for "Plan my trip to Paris.": not the recorded ones.
    assert main([*args, "--model", "test", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["mode"], report["model"]) == ("model", "test")
    assert {d["kind"] for d in report["divergences"]} <= {"unrecorded_call", "call_not_made"}


def test_replay_refuses_an_unknown_model(
    recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["replay", "--events", str(events_file(recorded)), "--dir", str(recorded.project)]
    assert main([*args, "--model", "nosuch:model"]) == 2
    assert "unknown model provider" in capsys.readouterr().err
