"""Agent-execution tools: run a tool's handler as a subprocess inside the session workspace.

The host runs `python -m agentkit.engine.agent_tool <module> <attribute> <path>` (the path
of the tool's file, relative to the project root) with the current
directory set to the workspace and the project root on `PYTHONPATH`. The child reads
`{"input": ..., "session": ..., "callId": ...}` as JSON on stdin, validates the input with
the tool's own model, calls the handler, and writes one JSON line on stdout:
`{"ok": true, "result": ...}` or `{"ok": false, "error": "..."}`. The host enforces the
timeout (the child is killed) and keeps the last lines of stderr for error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from agentkit.engine.tools import Outcome, elapsed_ms

STDERR_TAIL = 2000


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
) -> Outcome:
    """Run one agent-execution tool call in a child process and return its outcome."""
    started = time.perf_counter()
    env = dict(os.environ)
    paths = [str(project_root)] if project_root is not None else []
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    payload = json.dumps({"input": arguments, "session": session, "callId": call_id})
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agentkit.engine.agent_tool",
        module,
        attribute,
        *([path] if path else []),
        cwd=str(workspace),
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(payload.encode()), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return Outcome(
            True, error=f"agent tool timed out after {timeout:g}s", duration_ms=elapsed_ms(started)
        )
    tail = err.decode(errors="replace")[-STDERR_TAIL:].strip()
    line = out.decode(errors="replace").strip().splitlines()[-1:] if out else []
    try:
        reply = json.loads(line[0]) if line else None
    except json.JSONDecodeError:
        reply = None
    if not isinstance(reply, dict):
        detail = f": {tail}" if tail else ""
        return Outcome(
            True,
            error=f"agent tool exited with code {proc.returncode} and no result{detail}",
            duration_ms=elapsed_ms(started),
        )
    if reply.get("ok"):
        return Outcome(False, result=reply.get("result"), duration_ms=elapsed_ms(started))
    return Outcome(
        True, error=str(reply.get("error") or "agent tool failed"), duration_ms=elapsed_ms(started)
    )


def _load(module: str, path: str | None) -> Any:
    """Import the tool's module, by file when its path (relative to the root) is known."""
    if path:
        for base in sys.path:
            candidate = Path(base or ".") / path
            if candidate.is_file():
                spec = importlib.util.spec_from_file_location(module, candidate)
                if spec is not None and spec.loader is not None:
                    loaded = importlib.util.module_from_spec(spec)
                    sys.modules[module] = loaded
                    spec.loader.exec_module(loaded)
                    return loaded
    return importlib.import_module(module)


def _child(module: str, attribute: str, path: str | None) -> dict[str, Any]:
    from pydantic import ValidationError
    from pydantic_core import to_jsonable_python

    from agentkit.authoring.contexts import HostServices, SessionInfo, ToolContext

    sys.path.append(os.getcwd())
    request = json.loads(sys.stdin.read() or "{}")
    definition = getattr(_load(module, path), attribute)
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
    if len(argv) not in (2, 3):
        print(
            "usage: python -m agentkit.engine.agent_tool <module> <attribute> [<path>]",
            file=sys.stderr,
        )
        return 2
    try:
        reply = _child(argv[0], argv[1], argv[2] if len(argv) == 3 else None)
    except Exception as exc:
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
