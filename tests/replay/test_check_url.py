"""`agentkit check-deploy --url`: the sessions of a running `agentkit serve`, read over HTTP
with the caller's token, replayed on the bundle about to ship."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentkit.cli import main
from agentkit.client import Client
from tests.fixtures.http_server import ServeFactory

TOKEN = "check-deploy-token"


def test_check_deploy_reads_a_running_host(
    serve: ServeFactory, agent_project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = serve("--bearer-token", TOKEN)
    with Client(served.url, TOKEN) as client:
        session = client.start("What's the weather in Paris?")
        assert "Paris" in session.reply_text(timeout=60)
    check = ["check-deploy", "--url", served.url, "--token", TOKEN, "--last", "5"]
    assert main([*check, "--dir", str(agent_project)]) == 0
    assert "1 session(s) replayed, 0 diverged" in capsys.readouterr().out

    changed = Path(shutil.copytree(agent_project, tmp_path / "changed"))
    (changed / "agent/tools/get_weather.py").unlink()
    assert main([*check, "--dir", str(changed)]) == 1
    assert "tool_missing: tool 'get_weather'" in capsys.readouterr().out
    assert main([*check, "--token", "wrong", "--dir", str(agent_project)]) == 1
    assert "cannot read the recorded sessions" in capsys.readouterr().err
