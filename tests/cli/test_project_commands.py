"""validate / info / build / init through `agentkit.cli.main`, as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit.cli import main
from agentkit.project.manifest import Diagnostic, Manifest
from tests.fixtures.project_tree import ProjectTree

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = [REPO / "examples" / "weather", REPO / "examples" / "pr-review", REPO]


@pytest.mark.parametrize("command", ["validate", "info", "build", "init"])
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"agentkit {command}" in out and len(out.splitlines()) > 3


@pytest.mark.parametrize("project", EXAMPLES, ids=lambda p: p.name)
def test_shipped_agents_validate_cleanly(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--dir", str(project)]) == 0
    assert "valid (0 error(s), 0 warning(s))" in capsys.readouterr().out


def test_validate_exits_1_on_errors(
    project_tree: ProjectTree, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project_tree({"agent/tools/broken.py": "def broken(:\n"})
    assert main(["validate", "--dir", str(root)]) == 1
    out = capsys.readouterr().out
    assert "agent/tools/broken.py" in out and "[import.failed]" in out


def test_validate_exits_0_on_warnings_only(
    project_tree: ProjectTree, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project_tree({"agent/tools/notes.txt": "x"})
    assert main(["validate", "--dir", str(root)]) == 0
    assert "[file.ignored]" in capsys.readouterr().out


def test_validate_json_lists_diagnostics(
    project_tree: ProjectTree, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project_tree({"agent/schedules/x.md": "---\ncron: nope\n---\nGo\n"})
    assert main(["validate", "--dir", str(root), "--json"]) == 1
    (diag,) = [Diagnostic.model_validate(d) for d in json.loads(capsys.readouterr().out)]
    assert diag.code == "schedule.invalid_cron"


@pytest.mark.parametrize("command", ["validate", "info"])
def test_missing_dir_is_a_usage_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--dir", str(tmp_path / "nope")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_info_json_is_the_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--dir", str(REPO / "examples" / "pr-review"), "--json"]) == 0
    manifest = Manifest.model_validate_json(capsys.readouterr().out)
    assert manifest.agent.name == "pr-review"
    approve = manifest.tool("approve_pr")
    assert approve is not None and approve.needs_approval is True
    assert {s.kind for s in manifest.schedules} == {"markdown", "handler"}
    assert [c.routes[0].path for c in manifest.channels] == [
        "/v1/channels/drive",
        "/v1/channels/github",
    ]
    assert [c.kind for c in manifest.channels] == ["custom", "github"]
    assert manifest.subagents[0].name == "reviewer"
    assert manifest.abs[0].name == "review-style"


def test_info_json_uses_camel_case_keys(capsys: pytest.CaptureFixture[str]) -> None:
    main(["info", "--dir", str(REPO / "examples" / "weather"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert "inputSchema" in data["tools"][0] and "needsApproval" in data["tools"][0]


def test_info_is_readable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--dir", str(REPO / "examples" / "pr-review")]) == 0
    out = capsys.readouterr().out
    assert "approve_pr" in out and "needs approval" in out
    assert "POST   /v1/channels/drive" in out


def test_info_shows_diagnostics_without_failing(
    project_tree: ProjectTree, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project_tree({"agent/hooks/x.py": "X = 1\n"})
    assert main(["info", "--dir", str(root)]) == 0
    assert "[definition.none]" in capsys.readouterr().out


def test_build_writes_manifest_and_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["build", "--dir", str(REPO / "examples" / "weather"), "--out", str(out)]) == 0
    assert (out / "agent" / "tools" / "get_weather.py").is_file()
    assert Manifest.model_validate_json((out / "manifest.json").read_text()).agent.name == "weather"


def test_build_refuses_errors(
    project_tree: ProjectTree, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project_tree({"agent/tools/x.py": "X = 1\n"})
    assert main(["build", "--dir", str(root), "--out", str(tmp_path / "out")]) == 1
    assert "[definition.none]" in capsys.readouterr().err


def test_init_scaffolds_an_agent_that_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "fresh-agent"
    assert main(["init", str(target)]) == 0
    assert main(["validate", "--dir", str(target)]) == 0
    assert "valid (0 error(s), 0 warning(s))" in capsys.readouterr().out
    assert main(["info", "--dir", str(target), "--json"]) == 0
    manifest = Manifest.model_validate_json(capsys.readouterr().out)
    assert manifest.agent.name == "fresh-agent"
    assert [t.name for t in manifest.tools] == ["roll_dice"]


def test_init_never_overwrites_an_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "existing"
    (target / "agent").mkdir(parents=True)
    (target / "agent" / "instructions.md").write_text("mine")
    assert main(["init", str(target)]) == 1
    assert (target / "agent" / "instructions.md").read_text() == "mine"


def test_init_rejects_a_folder_name_that_is_not_a_slug(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path / "v1")]) == 1


def test_console_script_entry_point(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentkit.cli",
            "validate",
            "--dir",
            str(REPO / "examples" / "weather"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_no_command_prints_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().err


def test_unknown_command_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2


async def test_each_channel_route_info_lists_is_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Listing a route is a promise: every channel route `agentkit info` prints is answered
    # by the app `agentkit serve` builds for the same folder (not a 404 or a 405).
    import httpx

    from agentkit.hosts.local import LocalHost, LocalHostOptions
    from agentkit.project.bundle import AgentBundle
    from agentkit.server.app import create_app
    from agentkit.server.options import ServerOptions

    project = REPO / "examples" / "pr-review"
    assert main(["info", "--dir", str(project)]) == 0
    listed = [
        tuple(line.split()[:2])
        for line in capsys.readouterr().out.splitlines()
        if "/v1/channels/" in line and line.split()[0] in {"GET", "POST"}
    ]
    assert ("POST", "/v1/channels/drive") in listed

    bundle = AgentBundle.discover(project)
    host = LocalHost(bundle, LocalHostOptions(state_root=tmp_path / "state"))
    await host.start()
    try:
        app = create_app([host.mount()], ServerOptions(mode="single"))
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            for method, path in listed:
                r = await c.request(method, path, json={"pr": 7})
                assert r.status_code not in {404, 405} and r.status_code < 500, (path, r.text)
            drive = await c.post("/v1/channels/drive", json={"pr": 7})
            assert drive.status_code == 200, drive.text
            assert drive.json()["sessionId"].startswith("ses_")
    finally:
        await host.aclose()


def test_info_lists_mcp_connections_with_transport_and_pinned_tools(
    capsys: pytest.CaptureFixture[str],
) -> None:
    units = REPO / "examples" / "units"
    assert main(["info", "--dir", str(units)]) == 0
    out = capsys.readouterr().out
    section = out[out.index("mcp connections (1)") :].splitlines()
    assert section[1].split()[:2] == ["units", "stdio"] and "servers/units.py" in section[1]
    assert section[2].strip() == "pinned: celsius_to_fahrenheit, km_to_miles"
    assert main(["info", "--dir", str(units), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [conn] = data["mcpConnections"]
    assert conn["name"] == "units" and conn["transport"] == "stdio"
    assert conn["tools"] == ["km_to_miles", "celsius_to_fahrenheit"]
    assert sorted(data["mcpLock"]["connections"]["units"]) == sorted(conn["tools"])


def test_build_bakes_the_mcp_lock_into_the_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deployed agent pins its MCP tools from the manifest (`connections_for` reads
    `manifest.mcp_lock`), so the build must carry the committed lock."""
    units = REPO / "examples" / "units"
    out = tmp_path / "out"
    assert main(["build", "--dir", str(units), "--out", str(out)]) == 0
    built = Manifest.model_validate_json((out / "manifest.json").read_text())
    committed = json.loads((units / "agent" / "mcp.lock").read_text())
    assert built.mcp_lock == committed
    assert built.mcp_lock["connections"]["units"]["km_to_miles"]["hash"].startswith("sha256:")
