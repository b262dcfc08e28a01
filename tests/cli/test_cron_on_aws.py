"""Cron that runs locally but not on EventBridge: a warning from validate, an error when
building for AWS (`agentkit build --target aws` and the check `sam build` runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentkit.aws.check import main as aws_check
from agentkit.cli import main
from tests.fixtures.project_tree import ProjectTree

# cron, a piece of the reason, a piece of the alternative offered
NOT_ON_AWS = [
    ("0 9 L * *", "not standard cron", '"0 9 28-31 * *"'),
    ("0 9 * * 1#2", "not standard cron", '"0 9 * * 1"'),
    ("0 0 1 * 1", "restricts both day-of-month and day-of-week", '"0 0 1 * *" and "0 0 * * 1"'),
    ("0 0 1 * 0-6", "lists every day-of-week", '"0 0 1 * *"'),
]


def _project(project_tree: ProjectTree, cron: str) -> Path:
    return project_tree({"agent/schedules/report.md": f'---\ncron: "{cron}"\n---\nReport.\n'})


@pytest.mark.parametrize(("cron", "reason", "alternative"), NOT_ON_AWS)
def test_validate_warns_with_reason_and_alternative(
    project_tree: ProjectTree,
    capsys: pytest.CaptureFixture[str],
    cron: str,
    reason: str,
    alternative: str,
) -> None:
    root = _project(project_tree, cron)
    assert main(["validate", "--dir", str(root), "--json"]) == 0
    (diag,) = json.loads(capsys.readouterr().out)
    assert diag["severity"] == "warning"
    assert diag["code"] == "schedule.cron_not_on_aws"
    assert diag["path"] == "agent/schedules/report.md"
    assert reason in diag["message"] and alternative in diag["message"]


@pytest.mark.parametrize(("cron", "reason", "alternative"), NOT_ON_AWS)
def test_build_for_aws_refuses_it(
    project_tree: ProjectTree,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cron: str,
    reason: str,
    alternative: str,
) -> None:
    root = _project(project_tree, cron)
    assert main(["build", "--dir", str(root), "--out", str(tmp_path / "local")]) == 0
    assert "schedule.cron_not_on_aws" in capsys.readouterr().err
    out = tmp_path / "aws"
    assert main(["build", "--dir", str(root), "--out", str(out), "--target", "aws"]) == 1
    err = capsys.readouterr().err
    assert "cannot be deployed on AWS" in err
    assert "error" in err and "schedule 'report'" in err and alternative in err
    # the check `sam build` runs after `agentkit build` agrees
    assert aws_check([str(out / "manifest.json")]) == 1
    assert reason in capsys.readouterr().err


def test_translatable_cron_builds_for_aws_without_warnings(
    project_tree: ProjectTree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _project(project_tree, "*/15 9-17 * * mon-fri")
    assert main(["validate", "--dir", str(root)]) == 0
    assert "0 warning(s)" in capsys.readouterr().out
    out = tmp_path / "aws"
    assert main(["build", "--dir", str(root), "--out", str(out), "--target", "aws"]) == 0
    assert aws_check([str(out / "manifest.json")]) == 0
