"""`agentkit eval` as a user runs it: a subprocess on real projects, exit codes, reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.evals.conftest import case, write_project

pytestmark = pytest.mark.slow(reason="runs agentkit eval in subprocesses")


def agentkit(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, AGENTKIT_MODEL="test")
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


# Every example ships evals (`make evals` runs them all): a new example joins by existing.
SHIPPED = [
    ".",
    *sorted(f"examples/{p.name}" for p in (REPO_ROOT / "examples").iterdir() if p.is_dir()),
]


@pytest.mark.parametrize("project", SHIPPED)
def test_every_shipped_project_passes_its_evals(project: str, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    done = agentkit("eval", "--dir", str(REPO_ROOT / project), "--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "failed" not in done.stdout
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and int(suite.get("tests") or 0) >= 2
    assert suite.get("failures") == "0" and suite.get("errors") == "0"


def test_the_pr_review_example_has_a_time_travel_case() -> None:
    done = agentkit("eval", "--dir", str(REPO_ROOT / "examples/pr-review"), "--tag", "time")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "time/reminder" in done.stdout and "1 passed" in done.stdout


def project(tmp_path: Path) -> Path:
    return write_project(
        tmp_path / "proj",
        {
            "ok.eval.py": case(
                'define_eval(message="Weather in Paris?", tags=["smoke"], '
                'assertions=[called_tool("get_weather", city="Paris")])'
            ),
            "group/bad.eval.py": case(
                'define_eval(message="Weather in Oslo?", tags=["smoke", "slow"], '
                'assertions=[reply_contains("a zebra")])'
            ),
            "group/other.eval.py": case('define_eval(message="hi", tags=["slow"])'),
        },
    )


def test_a_failing_case_exits_1_with_a_summary_table_and_reports(tmp_path: Path) -> None:
    root = project(tmp_path)
    out_json, junit = tmp_path / "out.json", tmp_path / "junit.xml"
    done = agentkit("eval", "--dir", str(root), "--json", str(out_json), "--junit", str(junit))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    header = ["case", "status", "duration", "tokens", "cost", "first", "failure"]
    assert lines[0].split() == header
    bad = next(line for line in lines if line.startswith("group/bad"))
    assert "failed" in bad and "reply does not contain 'a zebra'" in bad
    assert "2 passed, 1 failed" in done.stdout
    # Not a terminal: one plain progress line per case on stderr.
    assert sorted(line.split()[1] for line in done.stderr.splitlines()) == [
        "group/bad",
        "group/other",
        "ok",
    ]
    data = json.loads(out_json.read_text())
    assert data["ok"] is False and data["counts"]["failed"] == 1
    by_id = {c["id"]: c for c in data["cases"]}
    assert by_id["ok"]["sessionId"].startswith("ses_") and by_id["ok"]["usage"]["inputTokens"] > 0
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "1"  # type: ignore[union-attr]


def test_filter_and_tag_select_cases_and_nothing_matching_exits_1(tmp_path: Path) -> None:
    root = project(tmp_path)
    done = agentkit("eval", "--dir", str(root), "--filter", "group", "--tag", "slow", "--tag", "x")
    assert done.returncode == 1
    assert "group/bad" in done.stdout and "group/other" in done.stdout and "ok " not in done.stdout
    done = agentkit("eval", "--dir", str(root), "--filter", "ok", "--filter", "group/other")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    done = agentkit("eval", "--dir", str(root), "--tag", "nope")
    assert done.returncode == 1 and "no eval matches" in done.stderr


def test_trials_and_the_baseline_from_the_command_line(tmp_path: Path) -> None:
    root = project(tmp_path)
    base = tmp_path / "baseline.json"
    done = agentkit(
        "eval", "--dir", str(root), "--filter", "ok", "--trials", "3",
        "--baseline", str(base), "--update-baseline",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed 3/3" in done.stdout
    assert json.loads(base.read_text())["cases"]["ok"]["status"] == "passed"
    done = agentkit("eval", "--dir", str(root), "--baseline", str(base))
    assert done.returncode == 1
    assert "worse" not in done.stdout and "new      group/bad" in done.stdout
    assert agentkit("eval", "--dir", str(root), "--trials", "zero").returncode == 2


def test_a_project_whose_evals_have_no_config_exits_1(tmp_path: Path) -> None:
    root = write_project(tmp_path, {"a.eval.py": case('define_eval(message="hi")')}, config=None)
    done = agentkit("eval", "--dir", str(root))
    assert done.returncode == 1
    assert "evals.config_missing" in done.stderr


def test_the_pytest_plugin_collects_and_runs_eval_files(tmp_path: Path) -> None:
    root = project(tmp_path)
    env = dict(os.environ, AGENTKIT_MODEL="test")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "evals/", "-v", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "evals/ok.eval.py::ok PASSED" in out
    assert "evals/group/other.eval.py::group/other PASSED" in out
    assert "evals/group/bad.eval.py::group/bad FAILED" in out
    assert "reply does not contain 'a zebra'" in out
    assert "1 failed, 2 passed" in out


def test_a_terminal_gets_a_progress_bar_instead_of_lines(tmp_path: Path) -> None:
    """stderr on a pseudo-terminal: one redrawn bar (carriage returns), no per-case lines."""
    import pty

    root = project(tmp_path)
    master, slave = pty.openpty()
    env = dict(os.environ, AGENTKIT_MODEL="test", TERM="xterm")
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentkit.cli", "eval", "--dir", str(root)],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
        text=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    while True:  # read until the child closes its end (EIO on Linux, b"" elsewhere)
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    stdout, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1, stdout
    bar = b"".join(chunks).decode()
    assert "\r[" in bar and "] 3/3 " in bar, repr(bar)
    assert "#" * 30 in bar  # the last redraw is full
    assert "passed  ok (" not in bar and "failed  group/bad (" not in bar
    assert "2 passed, 1 failed" in stdout


def test_model_names_the_model_every_case_runs_on(tmp_path: Path) -> None:
    """The agent names a provider model whose key is not set: its own run fails, and
    `--model test` runs the same case on the offline model instead."""
    root = write_project(
        tmp_path / "proj",
        {"hi.eval.py": case('define_eval(message="hi", assertions=[succeeded()])')},
        extra={
            "agent/agent.py": (
                "from agentkit import define_agent\n\n"
                'agent = define_agent(model="openai:gpt-4.1-mini")\n'
            )
        },
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("AGENTKIT_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL")
    }

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentkit.cli", "eval", "--dir", str(root), *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    own = run()
    assert own.returncode == 1 and "the turn failed" in own.stdout, own.stdout + own.stderr
    named = run("--model", "test")
    assert named.returncode == 0, named.stdout + named.stderr
    assert "1 passed" in named.stdout
