"""MCP connections on Lambda: a stdio server runs as a child process of TurnFunction,
opened by the first turn that lists tools and reused by the next invocation (the process
keeps one event loop across invocations, so the connection stays open)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.aws.handlers import _common
from agentkit.models.scripted import Step, call
from tests.aws import conftest
from tests.aws.conftest import Stack, script
from tests.aws.test_flow import api_call, body_of
from tests.mcp.servers import UNITS_SERVER

CONNECTION = f"""
from agentkit import define_mcp_connection

units = define_mcp_connection(command=[{sys.executable!r}, {UNITS_SERVER!r}], timeout=20)
"""


@pytest.fixture
def _units_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {**conftest.AGENT_FILES, "agent/mcp-connections/units.py": CONNECTION}
    monkeypatch.setattr(conftest, "AGENT_FILES", files)


@pytest.fixture
def units_stack(_units_agent: None, aws_stack: Stack) -> Iterator[Stack]:
    yield aws_stack
    mcp = aws_stack.host.services.mcp
    if mcp is not None:
        _common.run(mcp.aclose())


def parent_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("PPid:")).split()[1])


def pid_results(stack: Stack, session_id: str) -> list[dict[str, Any]]:
    events = _common.run(stack.host.store.read(session_id))
    return [
        e.data
        for e in events
        if e.type == "action.result" and e.data["toolName"] == "mcp__units__server_pid"
    ]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_two_turn_invocations_share_one_stdio_server_child(units_stack: Stack) -> None:
    script(
        units_stack,
        Step.tool_calls(call("mcp__units__server_pid", {})),
        Step.text("First."),
        Step.tool_calls(call("mcp__units__server_pid", {})),
        Step.text("Second."),
    )
    created = body_of(api_call("api/create-session.json"))
    units_stack.run_turns()  # TurnFunction, first invocation: opens the connection
    followed = api_call(
        "api/follow-up.json",
        path=f"/v1/session/{created['sessionId']}",
        body={"continuationToken": created["continuationToken"], "message": "Again."},
    )
    assert followed["statusCode"] == 200, followed
    units_stack.run_turns()  # second invocation: the same process answers

    first, second = pid_results(units_stack, created["sessionId"])
    assert not first["isError"] and not second["isError"], (first, second)
    pid = first["result"]["result"]
    assert second["result"]["result"] == pid
    assert parent_of(pid) == os.getpid()  # a child of the function's process
    # the model was offered the server's tools with their schemas
    offered = {t.name for t in units_stack.model.requests[0].tools}
    assert {"mcp__units__km_to_miles", "mcp__units__server_pid"} <= offered
