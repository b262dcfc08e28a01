"""An agent with custom channels and a GitHub channel, served by real `agentkit serve`."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.channels.github_standin import GitHubStandIn
from tests.channels.slack_standin import SlackStandIn
from tests.fixtures.http_server import AGENT_FILES, Served, _env

CHANNEL_FILES = {
    "agent/tools/wait_gate.py": """
        import asyncio
        import os
        from pathlib import Path

        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class GateInput(BaseModel):
            label: str = "gate"


        @define_tool(description="Wait until the test opens the gate.")
        async def wait_gate(input: GateInput, ctx: ToolContext) -> dict:
            gate = Path(os.environ["GATE_FILE"])
            Path(os.environ["GATE_FILE"] + ".entered").touch()
            for _ in range(12000):  # a generous bound (~10 minutes), never a speed check
                if gate.exists():
                    return {"passed": input.label}
                await asyncio.sleep(0.05)
            return {"timeout": True}
    """,
    "agent/channels/drive.py": """
        import os

        from pydantic import BaseModel, Field
        from agentkit import define_channel, route


        class DriveBody(BaseModel):
            pr_url: str = Field(min_length=1)
            note: str = ""


        class TaskBody(BaseModel):
            what: str


        def _log(line: str) -> None:
            with open(os.environ["CHANNEL_LOG"], "a", encoding="utf-8") as f:
                f.write(line + "\\n")


        async def drive(body: DriveBody, ctx):
            _log(f"called {body.pr_url}")
            busy = body.note if body.note in ("queue", "reject", "interrupt") else None
            accepted = await ctx.receive(
                f"Review {body.pr_url} {body.note}".strip(),
                continuation_key=body.pr_url,
                on_busy=busy,
            )
            return {"sessionId": accepted.session_id, "key": ctx.continuation_key}


        async def kickoff(body: TaskBody, ctx):
            return {"task": f"Audit {body.what}"}


        def echo(ctx):
            return {"query": dict(ctx.query), "principal": ctx.principal}


        async def record(event, ctx):
            _log(f"event {event.session_id} {event.index} {event.type} {ctx.session.principal}")


        async def broken(event, ctx):
            raise RuntimeError("a failing channel handler")


        channel = define_channel(
            routes=[
                route("POST", "/", drive),
                route("POST", "/task", kickoff),
                route("GET", "/echo", echo),
            ],
            events={"*": record, "step.started": broken},
            continuation=lambda body: getattr(body, "pr_url", None),
        )
    """,
    "agent/channels/signed.py": """
        from pydantic import BaseModel
        from agentkit import define_channel, route


        class Ping(BaseModel):
            text: str


        async def ping(body: Ping, ctx):
            return {"pong": body.text, "principal": ctx.principal}


        channel = define_channel(
            routes=[route("POST", "/ping", ping)],
            auth=lambda request: "partner" if request.header("X-Partner-Key") == "k1" else None,
        )
    """,
    "agent/schedules/nudge.py": """
        from agentkit import define_schedule
        from agent.channels.drive import channel


        async def run(ctx):
            await ctx.receive(channel, message="Nudge the review", continuation_key="pr-1")


        schedule = define_schedule(cron="0 0 1 1 *", run=run)
    """,
    "agent/schedules/nudge_by_id.py": """
        from agentkit import define_schedule


        async def run(ctx):
            await ctx.receive("drive", message="Nudge by id", continuation_key="pr-2")


        schedule = define_schedule(cron="0 0 1 1 *", run=run)
    """,
    "agent/channels/github.py": """
        from agentkit.channels.github import github_channel

        channel = github_channel(approvers=["octo-lead"], bot_login="agentkit-bot")
    """,
    "agent/tools/merge_pr.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class MergeInput(BaseModel):
            method: str = "squash"


        @define_tool(description="Merge the pull request.", needs_approval=True)
        async def merge_pr(input: MergeInput, ctx: ToolContext) -> dict:
            return {"merged": input.method}
    """,
}


def fail_next_dispatch(host: Any) -> Any:
    """Make the host's next turn dispatch fail (a dispatcher outage, as a Lambda Invoke
    error is); later ones go through. Returns the dispatcher."""
    dispatcher = host.runtime.dispatcher
    real_dispatch = dispatcher.dispatch
    failures = [RuntimeError("dispatcher unavailable")]

    async def dispatch_failing_once(session_id: str, turn_id: str) -> None:
        if failures:
            raise failures.pop()
        await real_dispatch(session_id, turn_id)

    dispatcher.dispatch = dispatch_failing_once
    return dispatcher


async def eventually(check: Any, what: str, timeout: float = 30.0) -> list[Any]:
    """Poll `check` (without blocking the event loop) until it returns something truthy."""
    for _ in range(int(timeout / 0.05)):
        found = check()
        if found:
            return list(found)
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def write_channel_project(base: Path) -> Path:
    """The channels agent, written under `base`."""
    files = {k: v for k, v in AGENT_FILES.items() if "slow_job" not in k}
    return write(base / "helpdesk", {**files, **CHANNEL_FILES})


def channel_env_in(base: Path) -> dict[str, str]:
    """The environment the channels agent runs in, its log and gate files under `base`."""
    return {
        "CHANNEL_LOG": str(base / "channel.log"),
        "GATE_FILE": str(base / "gate"),
        "GITHUB_TOKEN": "ghs_test_installation_token",
        "GITHUB_API_URL": "http://127.0.0.1:9/unused",
    }


def assert_no_unexpected_traceback(served: Served) -> None:
    """Only the channel handler that fails on purpose may have logged a traceback."""
    output = served.output()
    assert "Traceback" not in output or "a failing channel handler" in output, output


@pytest.fixture
def slack_standin() -> Iterator[SlackStandIn]:
    """A Slack Web API stand-in on loopback that offers `assistant.threads.setStatus`."""
    server = SlackStandIn(status_ok=True).start()
    yield server
    server.stop()


@pytest.fixture
def github_standin() -> Iterator[GitHubStandIn]:
    """A GitHub REST API stand-in on loopback."""
    server = GitHubStandIn().start()
    yield server
    server.stop()


@pytest.fixture
def channel_project(tmp_path: Path) -> Path:
    return write_channel_project(tmp_path)


@pytest.fixture
def channel_env(tmp_path: Path) -> dict[str, str]:
    return channel_env_in(tmp_path)


@pytest.fixture
def serve_channels(tmp_path: Path, channel_project: Path, channel_env: dict[str, str]) -> Iterator:
    started: list[Served] = []

    def factory(*args: str, env: dict[str, str] | None = None) -> Served:
        full = _env({**channel_env, **(env or {})})
        if "GITHUB_WEBHOOK_SECRET" not in (env or {}):
            full.pop("GITHUB_WEBHOOK_SECRET", None)  # never inherited from the shell
        served = Served(channel_project, tmp_path / "state", list(args), full)
        started.append(served)
        return served.start()

    yield factory
    for served in started:
        served.stop()
        assert_no_unexpected_traceback(served)
