"""Agent-execution tools: run a tool's handler as a subprocess inside the session workspace.

The workspace holds files a caller sent (`workspaceFiles`) and files the model wrote, so
nothing in it may ever be imported as code. The host therefore runs

    python -I -c <bootstrap> <host sys.path> --root <project root> <module> <attribute> <path>

`-I` (isolated mode) keeps the working directory, `PYTHONPATH` and the user's site-packages
off `sys.path`; the bootstrap sets `sys.path` to the host's own absolute entries (none inside
the workspace), the child then puts the project root first and loads the tool's file only
from `<project root>/<path>`, after checking it resolves inside the project. Its environment
is an allow-list (`PATH`, locale, `TZ`, `HOME` set to the workspace) plus the variables the
tool declares with `define_tool(..., env=[...])`: provider keys and cloud credentials stay
with the server unless a tool asks for them by name.

The child reads `{"input": ..., "session": ..., "callId": ...}` as JSON on stdin, validates
the input with the tool's own model, calls the handler, and writes one JSON line on stdout:
`{"ok": true, "result": ...}` or `{"ok": false, "error": "..."}`. It runs in its own process
group (see `child_process`): the timeout, an output over `MAX_OUTPUT_BYTES`, cancelling the
awaiting task and shutdown all kill the whole group.

This is isolation from the caller's files, not a sandbox: the tool's own code runs with the
server user's file-system rights. See docs/engine.md.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentkit.engine.tools.calls import Outcome, elapsed_ms
from agentkit.engine.tools.child_process import run_child
from agentkit.events import escape_line_breaks

STDERR_TAIL = 2000
MAX_OUTPUT_BYTES = 1024 * 1024
# What any child gets from the server's environment (HOME is set to the workspace).
BASE_ENV = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")


def child_env(
    workspace: Path, declared: Iterable[str] = (), source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The allow-listed environment of a tool's child process."""
    source = os.environ if source is None else source
    env = {name: source[name] for name in (*BASE_ENV, *declared) if name in source}
    env["HOME"] = str(workspace)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def dump_line(value: Any) -> str:
    """One JSON line that no splitter can break: U+2028, U+2029 and U+0085 escaped."""
    return escape_line_breaks(json.dumps(value, ensure_ascii=False)) + "\n"


# Runs first in the child: the import path is the one the host hands over, nothing else.
# (`-I` already keeps the working directory and PYTHONPATH out; on Lambda the packages are
# found through PYTHONPATH, so the host's own resolved path is passed explicitly.)
BOOTSTRAP = (
    "import sys, json; sys.path[:] = json.loads(sys.argv.pop(1)); "
    "from agentkit.engine.tools.agent_tool import main; raise SystemExit(main(sys.argv[1:]))"
)


def safe_sys_path(workspace: Path) -> list[str]:
    """The host's `sys.path` without relative entries or anything inside the workspace."""
    ws = workspace.resolve()
    out: list[str] = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry):
            continue  # "" and relative entries mean "the current folder": the workspace
        resolved = Path(entry).resolve()
        if resolved == ws or resolved.is_relative_to(ws) or entry in out:
            continue
        out.append(entry)
    return out


def child_command(
    module: str,
    attribute: str,
    path: str | None,
    project_root: Path | None,
    workspace: Path,
) -> list[str]:
    """The isolated command line that runs one tool."""
    root = ["--root", str(project_root)] if project_root is not None else []
    return [
        sys.executable,
        "-I",
        "-X",
        "utf8",
        "-c",
        BOOTSTRAP,
        json.dumps(safe_sys_path(workspace)),
        *root,
        module,
        attribute,
        *([path] if path else []),
    ]


async def run_agent_tool(
    module: str,
    attribute: str,
    path: str | None,
    arguments: dict[str, Any],
    *,
    workspace: Path,
    project_root: Path | None,
    timeout: float,
    call_id: str,
    session: dict[str, Any] | None = None,
    env: Iterable[str] = (),
) -> Outcome:
    """Run one agent-execution tool call in a child process and return its outcome."""
    started = time.perf_counter()
    payload = json.dumps({"input": arguments, "session": session, "callId": call_id})
    ended = await run_child(
        child_command(module, attribute, path, project_root, workspace),
        cwd=workspace,
        env=child_env(workspace, env),
        stdin=payload.encode(),
        timeout=timeout,
        max_stdout=MAX_OUTPUT_BYTES,
        stderr_tail=STDERR_TAIL,
    )
    if ended.timed_out:
        return Outcome(
            True, error=f"agent tool timed out after {timeout:g}s", duration_ms=elapsed_ms(started)
        )
    if ended.overflowed:
        return Outcome(
            True,
            error=f"agent tool output went past {MAX_OUTPUT_BYTES} bytes",
            duration_ms=elapsed_ms(started),
        )
    tail = ended.stderr_tail.strip()
    # Split on "\n" only: str.splitlines would also break at U+2028 and friends.
    lines = [ln for ln in ended.stdout.decode(errors="replace").split("\n") if ln.strip()]
    try:
        reply = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        reply = None
    if not isinstance(reply, dict):
        detail = f": {tail}" if tail else ""
        return Outcome(
            True,
            error=f"agent tool exited with code {ended.returncode} and no result{detail}",
            duration_ms=elapsed_ms(started),
        )
    if reply.get("ok"):
        return Outcome(False, result=reply.get("result"), duration_ms=elapsed_ms(started))
    return Outcome(
        True, error=str(reply.get("error") or "agent tool failed"), duration_ms=elapsed_ms(started)
    )


def _load(module: str, path: str | None, root: Path) -> Any:
    """Import the tool's module from its file under `root`, and from nowhere else."""
    if not path:
        return importlib.import_module(module)
    base = root.resolve()
    candidate = (base / path).resolve()
    if not candidate.is_relative_to(base) or not candidate.is_file():
        raise ImportError(f"tool file {path!r} is not a file inside {base}")
    spec = importlib.util.spec_from_file_location(module, candidate)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load tool file {path!r}")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded
    spec.loader.exec_module(loaded)
    return loaded


def _child(module: str, attribute: str, path: str | None, root: Path) -> dict[str, Any]:
    from pydantic import ValidationError
    from pydantic_core import to_jsonable_python

    from agentkit.authoring.contexts import HostServices, SessionInfo, ToolContext

    request = json.loads(sys.stdin.read() or "{}")
    definition = getattr(_load(module, path, root), attribute)
    raw = request.get("input") or {}
    value: Any = raw
    if definition.input_model is not None:
        try:
            value = definition.input_model.model_validate(raw)
        except ValidationError as exc:
            return {"ok": False, "error": f"invalid tool input: {exc}"}
    info = request.get("session")
    session = SessionInfo(**info) if isinstance(info, dict) else None
    ctx = ToolContext(
        session=session,
        host=HostServices(),
        call_id=str(request.get("callId", "")),
        tool_name=attribute,
        workdir=Path.cwd(),
    )
    params = len(inspect.signature(definition.handler).parameters)
    result = definition.handler(*(value, ctx)[:params])
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    return {"ok": True, "result": to_jsonable_python(result, fallback=str)}


async def _await(aw: Any) -> Any:
    return await aw


def main(argv: list[str]) -> int:
    root: Path | None = None
    if argv[:1] == ["--root"] and len(argv) >= 2:
        root, argv = Path(argv[1]), argv[2:]
    if len(argv) not in (2, 3):
        print(
            "usage: python -I -m agentkit.engine.tools.agent_tool [--root <project>] <module> "
            "<attribute> [<path>]",
            file=sys.stderr,
        )
        return 2
    if root is not None:
        # The project comes first; the working directory (the workspace) never counts.
        cwd = os.getcwd()
        sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)]
        sys.path.insert(0, str(root.resolve()))
    try:
        reply = _child(argv[0], argv[1], argv[2] if len(argv) == 3 else None, root or Path.cwd())
    except Exception as exc:
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(dump_line(reply))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
