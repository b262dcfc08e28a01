"""The AWS build step refuses cron EventBridge cannot run: a build error, not a deploy one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agentkit.aws.check import main
from agentkit.project.build import build_project
from tests.aws.conftest import write_agent

ROOT = Path(__file__).resolve().parents[2]


def _built(tmp_path: Path, cron: str) -> Path:
    project = write_agent(tmp_path / "p")
    md = project / "agent" / "schedules" / "heartbeat.md"
    md.write_text(md.read_text().replace('"0 9 * * 1-5"', f'"{cron}"'))
    build_project(project, tmp_path / "build")
    return tmp_path / "build" / "manifest.json"


def test_translatable_schedules_pass(tmp_path: Path) -> None:
    assert main([str(_built(tmp_path, "0 9 * * 1-5"))]) == 0


def test_day_of_month_or_day_of_week_fails_the_build(tmp_path: Path) -> None:
    manifest = _built(tmp_path, "0 9 1 * 1")
    out = subprocess.run(
        [sys.executable, "-m", "agentkit.aws.check", str(manifest)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 1
    assert "agent/schedules/heartbeat.md: error: schedule 'heartbeat'" in out.stderr
    assert "schedule.cron_untranslatable" in out.stderr


def test_unreadable_manifest_is_a_usage_error(tmp_path: Path) -> None:
    assert main([str(tmp_path / "missing.json")]) == 2
    assert main([]) == 2
