"""The command line as a modern tool: examples and exit statuses in every --help, colour
and tables on a terminal, plain text when piped or with NO_COLOR, --json for data, and
`rich` kept off the serve and Lambda paths."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit.cli import build_parser, main
from tests.fixtures.project_tree import ProjectTree

REPO = Path(__file__).resolve().parents[2]
WARNED = {"agent/schedules/last.md": '---\ncron: "0 9 L * *"\n---\nReport.\n'}
_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def _commands() -> dict[str, str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return {name: p.format_help() for name, p in sub.choices.items()}  # type: ignore[attr-defined]


def test_every_command_has_examples_and_exit_statuses() -> None:
    helps = _commands()
    assert {"build", "eval", "info", "init", "run", "serve", "validate"} <= set(helps)
    for name, text in helps.items():
        examples = text.split("examples:")[-1]
        assert "examples:" in text and f"agentkit {name}" in examples, name
        assert "exit status: 0 " in text, name


def test_top_level_help_explains_output_modes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "NO_COLOR" in out and "--json" in out and "examples:" in out


def _colours(text: str) -> set[str]:
    """The foreground colour codes in `text`'s escape sequences."""
    found = set()
    for params in _SGR.findall(text):
        found |= {p for p in params.split(";") if p and (30 <= int(p) <= 38 or 90 <= int(p) <= 97)}
    return found


def _on_a_terminal(args: list[str], **env: str) -> tuple[int, str]:
    """Run agentkit with its output on a pseudo-terminal; return (status, what it drew)."""
    controller, terminal = pty.openpty()
    environ = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environ.update(TERM="xterm-256color", COLUMNS="160", **env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentkit.cli", *args],
        stdout=terminal,
        stderr=terminal,
        stdin=subprocess.DEVNULL,
        env=environ,
        cwd=REPO,
    )
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closes when the process ends
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", errors="replace")


def test_a_terminal_gets_a_coloured_table(project_tree: ProjectTree) -> None:
    root = project_tree(WARNED)
    status, drawn = _on_a_terminal(["validate", "--dir", str(root)])
    assert status == 0
    assert "│" in drawn and "severity" in drawn  # a table
    assert "33" in _colours(drawn)  # the warning in yellow


def test_no_color_keeps_the_table_and_drops_the_colour(project_tree: ProjectTree) -> None:
    root = project_tree(WARNED)
    status, drawn = _on_a_terminal(["validate", "--dir", str(root)], NO_COLOR="1")
    assert status == 0
    assert "│" in drawn and "schedule.cron_not_on_aws" in drawn
    assert _colours(drawn) == set()


def test_piped_output_is_plain_and_never_loads_rich(project_tree: ProjectTree) -> None:
    root = project_tree(WARNED)
    code = (
        "import sys\n"
        "from agentkit.cli import main\n"
        f"status = main(['validate', '--dir', {str(root)!r}])\n"
        "print('RICH', 'rich' in sys.modules, status)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert "\x1b[" not in out and "│" not in out
    assert "warning agent/schedules/last.md:" in out
    assert out.strip().endswith("RICH False 0")


def test_the_serve_path_does_not_load_rich() -> None:
    code = (
        "import sys\n"
        "from agentkit.cli import build_parser\n"
        "build_parser()\n"
        "import agentkit.cli.serve, agentkit.server.app, agentkit.hosts.local\n"
        "import agentkit.hosts.reload\n"
        "print('rich' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert out.stdout.strip() == "False"


def test_json_wherever_output_is_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "fresh"
    assert main(["init", str(project), "--json"]) == 0
    created = json.loads(capsys.readouterr().out)
    assert str(project / "agent" / "instructions.md") in created["created"]

    assert main(["build", "--dir", str(project), "--out", str(tmp_path / "b"), "--json"]) == 0
    built = json.loads(capsys.readouterr().out)
    assert built["agent"] == "fresh" and "manifest.json" in built["files"]
    assert built["diagnostics"] == []

    assert main(["run", "--dir", str(project), "--json", "Roll a die"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [c["toolName"] for c in result["toolCalls"]] == ["roll_dice"]
    trace = project / ".agentkit" / "traces" / f"{result['sessionId']}.ndjson"
    assert main(["trajectory", "--events", str(trace), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == result

    for command in (["validate", "--json"], ["info", "--json"]):
        assert main([command[0], "--dir", str(project), command[1]]) == 0
        json.loads(capsys.readouterr().out)


def test_a_terminal_run_shows_the_trajectory_as_a_table(tmp_path: Path) -> None:
    project = tmp_path / "fresh"
    assert main(["init", str(project)]) == 0
    status, drawn = _on_a_terminal(["run", "--dir", str(project), "Roll a die"])
    assert status == 0, drawn
    assert "roll_dice" in drawn and "│" in drawn and "tokens:" in drawn
    assert '"toolCalls"' not in drawn  # not the JSON


INFO_TREE = {
    **WARNED,
    "agent/tools/wipe.py": """
        from pydantic import BaseModel
        from agentkit import define_tool

        class WipeInput(BaseModel):
            folder: str

        @define_tool(description="Wipe a notes folder.", needs_approval=True)
        def wipe(input: WipeInput, ctx) -> str:
            return input.folder
    """,
}


def test_info_on_a_terminal_draws_tools_and_schedules_as_tables(
    project_tree: ProjectTree,
) -> None:
    root = project_tree(INFO_TREE)
    status, drawn = _on_a_terminal(["info", "--dir", str(root)], NO_COLOR="1")
    assert status == 0
    lines = drawn.splitlines()
    header = next(line for line in lines if "runs on" in line)
    assert "┃" in header and "approval" in header and "description" in header
    rows = [line for line in lines if "│" in line]
    wipe = next(line for line in rows if " wipe " in line)
    assert "yes" in wipe and "Wipe a notes folder." in wipe  # needs approval
    last = next(line for line in rows if " last " in line)
    assert "0 9 L * *" in last  # the schedule table
    assert "schedule.cron_not_on_aws" in drawn  # diagnostics as their own table
    assert "diagnostics 0 error(s), 1 warning(s)" in drawn


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`agentkit info ... | head -1` where the reader has already gone: no traceback, 141."""
    assert main(["init", str(tmp_path / "piped")]) == 0
    env = {**os.environ, "AGENTKIT_MODEL": "test", "NO_COLOR": "1"}
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes a byte
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "agentkit.cli", "info", "--dir", str(tmp_path / "piped")],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 141
