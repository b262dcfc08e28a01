"""`agentkit serve` refuses to start on mistakes, before it binds a port."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.cli import main
from tests.fixtures.http_server import write_agent


def test_serve_refuses_an_agent_with_error_diagnostics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "broken"
    (project / "agent" / "tools").mkdir(parents=True)
    (project / "agent" / "tools" / "nothing.py").write_text("x = 1\n")
    assert main(["serve", "--dir", str(project)]) == 1
    err = capsys.readouterr().err
    assert "agent/instructions.md" in err
    assert "agent/tools/nothing.py" in err
    assert "fix the errors above" in err


def test_single_mode_takes_exactly_one_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = write_agent(tmp_path / "a"), write_agent(tmp_path / "b")
    assert main(["serve", "--mode", "single", "--dir", str(a), "--dir", str(b)]) == 2
    assert "exactly one --dir" in capsys.readouterr().err


def test_two_agents_with_one_slug_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_agent(tmp_path / "one" / "same")
    b = write_agent(tmp_path / "two" / "same")
    assert main(["serve", "--dir", str(a), "--dir", str(b)]) == 2
    assert "share a slug" in capsys.readouterr().err


def test_missing_dir_and_empty_tokens_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--dir", str(tmp_path / "nowhere")]) == 2
    project = write_agent(tmp_path / "ok")
    assert main(["serve", "--dir", str(project), "--bearer-token", ""]) == 2
    empty = tmp_path / "tokens"
    empty.write_text("\n\n")
    assert main(["serve", "--dir", str(project), "--tokens-file", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "not a directory" in err and "must not be empty" in err and "no tokens" in err
