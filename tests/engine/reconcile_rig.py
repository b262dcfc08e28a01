"""Calls a crash leaves in doubt: a stand-in external service that counts its effects per
idempotency key, an agent whose tools call it, and a real process killed with SIGKILL at a
named point of one call.

The service runs in the test's process (a thread); the turn runs in a child,
`python -m tests.engine.reconcile_rig <project> <store> <tool> <point>`, which prints the
session and turn ids and runs the turn. The tools report the points they pass to the
service, and the service kills the child (`kill -9`, by the pid the tool sends) when the
point is the one it was armed with:

- `before`: the call started, nothing sent to the service yet;
- `sent`: the service applied the effect and the child dies before the answer reaches it;
- `acked`: the tool has the answer and dies before returning it (nothing recorded);
- `recorded`: the result is recorded; the child dies in the next model step.

The tools: `charge` (idempotent, with `reconcile`), `notify` (`reconcile`, not idempotent,
its API has no keys), `retry` (idempotent, no `reconcile`), `plain` (neither).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agentkit.models.base import Finish, ModelRequest
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.sessions import Principal

OWNER = Principal("alice")
ROOT = Path(__file__).resolve().parents[2]
POINTS = ("before", "sent", "acked", "recorded")

_TOOL = """
    import json, os, urllib.request
    from pydantic import BaseModel
    from agentkit import InDoubt, define_tool

    class ChargeInput(BaseModel):
        amount: int

    def _post(path, body):
        req = urllib.request.Request(
            os.environ["EFFECTS_URL"] + path,
            data=json.dumps({{**body, "pid": os.getpid()}}).encode(),
            headers={{"Content-Type": "application/json"}},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def _lookup(input, ctx):
        req = urllib.request.Request(os.environ["EFFECTS_URL"] + "/effects/" + ctx.idempotency_key)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return InDoubt.NOT_DONE
            raise

    def run(input, ctx):
        _post("/point", {{"point": "before"}})
        done = _post("/effects", {{"key": ctx.idempotency_key, "dedupe": {dedupe},
                                   "amount": input.amount}})
        _post("/point", {{"point": "acked"}})
        return done

    @define_tool(description="{name}", {options})
    def {name}(input: ChargeInput, ctx) -> dict:
        return run(input, ctx)
"""
TOOLS = {
    "charge": ("True", "idempotent=True, reconcile=_lookup"),
    "notify": ("False", "reconcile=_lookup"),
    "retry": ("True", "idempotent=True"),
    "plain": ("False", "timeout=60"),
}
PROJECT = {
    "agent/instructions.md": "# Crash matrix agent\n",
    "agent/agent.py": """
        from agentkit import define_agent
        agent = define_agent(max_steps=4, tool_timeout=60)
    """,
    **{
        f"agent/tools/{name}.py": _TOOL.format(name=name, dedupe=dedupe, options=options)
        for name, (dedupe, options) in TOOLS.items()
    },
}


def write_project(root: Path) -> Path:
    for rel, text in PROJECT.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


# ---- the stand-in service ------------------------------------------------------------


@dataclass
class Effects:
    """The service's books: every effect applied, per idempotency key."""

    by_key: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    armed: str | None = None  # the point at which the next caller is killed
    killed: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, key: str) -> int:
        with self.lock:
            return len(self.by_key.get(key, []))

    def total(self) -> int:
        with self.lock:
            return sum(len(v) for v in self.by_key.values())

    def arm(self, point: str | None) -> None:
        with self.lock:
            self.armed = point
            self.killed.clear()

    def kill_at(self, point: str, pid: int) -> bool:
        with self.lock:
            if self.armed != point:
                return False
            self.armed = None
        os.kill(pid, signal.SIGKILL)
        self.killed.set()
        return True


class EffectsService:
    """The service on a loopback port: `POST /effects` applies an effect (once per key when
    `dedupe`, as an API taking an `Idempotency-Key` does), `GET /effects/<key>` looks one
    up, `POST /point` reports where a caller is (and kills it there when armed)."""

    def __init__(self) -> None:
        self.effects = Effects()
        effects = self.effects

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _reply(self, status: int, body: Any) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                key = self.path.removeprefix("/effects/")
                with effects.lock:
                    found = effects.by_key.get(key)
                if found:
                    self._reply(200, found[0])
                else:
                    self._reply(404, {"error": "no such effect"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                pid = int(body["pid"])
                if self.path == "/point":
                    if not effects.kill_at(body["point"], pid):
                        self._reply(200, {})
                    return
                key = str(body["key"])
                with effects.lock:
                    done = effects.by_key.setdefault(key, [])
                    if not (body["dedupe"] and done):
                        done.append({"id": f"fx{len(done) + 1}", "amount": body["amount"]})
                    answer = done[0]
                if effects.kill_at("sent", pid):
                    return  # the effect is applied; the caller died before the answer
                self._reply(200, answer)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# ---- the stores, by a spec a child process can take on its command line ----------------


def open_store(spec: str, **options: Any) -> Any:
    """`files:<folder>` or `dynamodb:<endpoint>|<sessions table>|<events table>`."""
    kind, _, rest = spec.partition(":")
    if kind == "files":
        from agentkit.store.files import FileStore

        return FileStore(Path(rest), **options)
    from agentkit.store.dynamodb import DynamoDBSettings, DynamoDBStore

    endpoint, sessions, events = rest.split("|")
    settings = DynamoDBSettings(
        endpoint_url=endpoint, region="us-east-1", sessions_table=sessions, events_table=events
    )
    return DynamoDBStore(settings, **options)


def runtime(project: Path, spec: str, state: Path, model: Any, **options: Any) -> Any:
    from agentkit.engine.runtime import AgentRuntime
    from agentkit.project.bundle import AgentBundle

    return AgentRuntime(
        AgentBundle.discover(project),
        open_store(spec),
        model_resolver=lambda _id: model,
        state_root=state,
        **options,
    )


# ---- the child ---------------------------------------------------------------------


class _KilledInStepTwo(ScriptedModel):
    """Step one calls the tool; step two reports `recorded` to the service (which kills
    this process there when armed), then answers."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        if len(request.messages) > 1:
            await asyncio.to_thread(_report, "recorded")
        async for chunk in super().stream(request):
            yield chunk
            if isinstance(chunk, Finish):
                return


def _report(point: str) -> None:
    import urllib.request

    req = urllib.request.Request(
        os.environ["EFFECTS_URL"] + "/point",
        data=json.dumps({"point": point, "pid": os.getpid()}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        resp.read()


def steps(tool: str) -> list[Step]:
    return [Step.tool_calls(call(tool, {"amount": 5}, id="c1")), Step.text("charged")]


async def _child(project: Path, spec: str, state: Path, tool: str) -> None:
    # Long enough that a loaded machine (moto answers one request at a time) never lets
    # the lease lapse mid-call; the recovering side waits this long after the kill.
    rt = runtime(project, spec, state, _KilledInStepTwo(steps(tool)), lease_ttl=3.0)
    acc = await rt.start_session("charge me", principal=OWNER)
    print(acc.session_id, acc.turn_id, acc.continuation_token, flush=True)
    await rt.dispatcher.drain()
    await rt.store.close()


@dataclass(frozen=True)
class Crashed:
    session_id: str
    turn_id: str
    token: str


def crash_at(
    service: EffectsService, project: Path, spec: str, state: Path, tool: str, point: str
) -> Crashed:
    """Run one call of `tool` in a child process and `kill -9` it at `point`."""
    service.effects.arm(point)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "EFFECTS_URL": service.url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.engine.reconcile_rig", str(project), spec, str(state), tool],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().decode().split()
        if len(line) != 3:
            err = child.stderr.read().decode() if child.stderr else ""
            raise AssertionError(f"the child did not start its session: {err}")
        deadline = time.monotonic() + 60
        while not service.effects.killed.wait(0.05):
            # (The kill lands a moment before the service notes it: waited for below.)
            if child.poll() is not None and child.returncode != -signal.SIGKILL:
                err = child.stderr.read().decode() if child.stderr else ""
                raise AssertionError(
                    f"the {tool} call's process ended (exit {child.returncode}) before "
                    f"reaching {point}: {err}"
                )
            assert time.monotonic() < deadline, f"the call never reached {point}"
        assert child.wait(30) == -signal.SIGKILL
        return Crashed(*line)
    finally:
        service.effects.arm(None)
        if child.poll() is None:
            child.kill()
            child.wait()
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()


async def wait_lease_free(store: Any, session_id: str) -> None:
    deadline = time.monotonic() + 30
    while await store.get_lease(session_id) is not None:
        assert time.monotonic() < deadline, "the dead process's lease never expired"
        await asyncio.sleep(0.05)


def idempotency_key(session_id: str, call_id: str) -> str:
    """The key the tools passed for `call_id` (as `ToolContext.idempotency_key` makes it)."""
    from agentkit.authoring.contexts import HostServices, ToolContext

    ctx = ToolContext(
        session=_info(session_id), host=HostServices(), call_id=call_id, tool_name="", workdir=ROOT
    )
    return ctx.idempotency_key


def _info(session_id: str) -> Any:
    from agentkit.authoring.contexts import SessionInfo

    return SessionInfo(id=session_id, channel_id="http", mode="chat", principal="alice")


if __name__ == "__main__":
    p, s, st, t = sys.argv[1:5]
    asyncio.run(_child(Path(p), s, Path(st), t))
