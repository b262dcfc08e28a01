"""`agentkit run --dir . "message"`: one turn, locally, printed as a trajectory."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.cli._shared import (
    add_dir_argument,
    add_json_argument,
    print_diagnostics,
    project_dir,
)
from agentkit.cli._style import fancy
from agentkit.cli._views import print_trajectory

if TYPE_CHECKING:  # the engine stack is imported when the command runs, not at CLI start
    from agentkit.models.base import Model
    from agentkit.project.bundle import AgentBundle

EXIT_FAILED = 1
EXIT_APPROVAL = 3


EXAMPLES = """\
agentkit run --dir . "What is the weather in Lisbon?"
agentkit run --dir . --model anthropic:claude-sonnet-4-5 "Hello"
agentkit run --dir . --json "Hello" > trajectory.json
"""
EXIT_CODES = (
    "0 the turn completed, 1 the turn failed or the agent has errors, 2 usage error,"
    " 3 a tool call waits for approval, 130 interrupted"
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run one turn of the agent locally and print its trajectory",
        description=(
            "Send MESSAGE to the agent in --dir, run the turn in this process with the state "
            "under <dir>/.agentkit, write .agentkit/traces/<sessionId>.ndjson and print the "
            "trajectory: a table on a terminal, JSON when piped or with --json. Exits 1 "
            "when the turn fails and 3 when a tool call waits for approval."
        ),
    )
    add_dir_argument(parser)
    parser.add_argument("message", help="the message to send")
    parser.add_argument(
        "--model",
        help="a provider:model id (default: AGENTKIT_MODEL, then the agent's, then 'test')",
    )
    add_json_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentkit.project.bundle import AgentBundle

    root = project_dir(args)
    if root is None:
        return 2
    bundle = AgentBundle.discover(root)
    if bundle.manifest.has_errors:
        print_diagnostics(bundle.manifest.diagnostics, sys.stderr)
        print("agentkit: fix the errors above before running the agent", file=sys.stderr)
        return EXIT_FAILED
    return asyncio.run(_run(bundle, root, args.message, args.model, args.json))


async def _run(
    bundle: AgentBundle, root: Path, message: str, model_id: str | None, as_json: bool = False
) -> int:
    from agentkit.engine.dispatch import LocalDispatcher
    from agentkit.engine.folds.trajectory import dumps, trajectory
    from agentkit.engine.runtime import AgentRuntime
    from agentkit.models import agent_model_id, resolve_model
    from agentkit.server import otel
    from agentkit.sessions import Principal
    from agentkit.store.files import FileStore

    otel.configure()  # OTLP export when OTEL_EXPORTER_OTLP_* asks for it

    state = root / ".agentkit"
    store = FileStore(state)
    # --model, then AGENTKIT_MODEL, then agent/agent.py (the runtime applies the last two).
    root_id = agent_model_id(bundle.manifest.agent.model)

    def resolver(requested: str | None) -> Model:
        return resolve_model(model_id if model_id and requested == root_id else requested)

    runtime = AgentRuntime(bundle, store, model_resolver=resolver, state_root=state)
    from agentkit.mcp.connections import attach

    connections = attach(bundle, runtime, runtime.host)
    try:
        accepted = await runtime.start_session(message, principal=Principal("local"), source="cli")
        dispatcher = runtime.dispatcher
        assert isinstance(dispatcher, LocalDispatcher)
        await dispatcher.drain()
        events = await store.read(accepted.session_id)
    finally:
        if connections is not None:
            await connections.aclose()
        await store.close()
        otel.flush()
    trace = store.trace_path(accepted.session_id)
    trace.parent.mkdir(parents=True, exist_ok=True)
    trace.write_text("".join(e.to_json() + "\n" for e in events), encoding="utf-8")
    result = trajectory(events)
    if as_json or not fancy(sys.stdout):
        print(dumps(result))
    else:
        print_trajectory(result, sys.stdout)
        print(f"trace: {trace}")
    if result["approvals"]:
        names = ", ".join(f"{a['toolName']} ({a['callId']})" for a in result["approvals"])
        print(
            f"agentkit: the turn is waiting for approval of {names}; `agentkit run` cannot "
            "approve tool calls: use `agentkit serve` and the approvals routes",
            file=sys.stderr,
        )
        return EXIT_APPROVAL
    if result["error"]:
        print(f"agentkit: the turn failed: {result['error']}", file=sys.stderr)
        return EXIT_FAILED
    return 0
