"""`agentkit serve --emulate-aws` as a real subprocess, an agent to serve, and a stand-in
service that counts the tools' side effects.

The agent: `acknowledge` is what the test model calls when no tool's name is in the message
(a reminder's prompt); `deploy` needs approval and POSTs its effect (keyed by session and
call id) to the stand-in; `remind_me` arms a reminder a few seconds out; a hook appends every
event it sees to a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOKEN = "emulated-token"

AGENT_FILES = {
    "agent/agent.py": """
        from agentkit import define_agent

        agent = define_agent(model="test")
    """,
    "agent/instructions.md": "You are a test agent.\n",
    "agent/tools/acknowledge.py": """
        from pydantic import BaseModel

        from agentkit import define_tool


        class AckInput(BaseModel):
            note: str


        @define_tool(description="Acknowledge a message.")
        async def acknowledge(input: AckInput) -> dict:
            return {"acknowledged": True}
    """,
    "agent/tools/deploy.py": """
        import json
        import os
        import urllib.request

        from pydantic import BaseModel

        from agentkit import ToolContext, define_tool


        class DeployInput(BaseModel):
            env: str


        @define_tool(description="Deploy to an environment.", needs_approval=True)
        async def deploy(input: DeployInput, ctx: ToolContext) -> dict:
            # Call ids are unique within a session only.
            key = ctx.session.id + ":" + ctx.call_id
            body = json.dumps({"effect": "deploy", "key": key}).encode()
            request = urllib.request.Request(os.environ["STANDIN_URL"], data=body, method="POST")
            with urllib.request.urlopen(request, timeout=10) as response:
                return {"deployed": input.env, "count": json.loads(response.read())["count"]}
    """,
    "agent/tools/remind_me.py": """
        from pydantic import BaseModel

        from agentkit import ToolContext, define_tool


        class RemindInput(BaseModel):
            note: str


        @define_tool(description="Schedule a one-time reminder in this conversation.")
        async def remind_me(input: RemindInput, ctx: ToolContext) -> dict:
            session = ctx.session
            reminder = await ctx.host.reminders.create(
                purpose="user_follow_up",
                channel_id=session.channel_id,
                continuation_token=session.continuation_key or session.id,
                delay="1s",
                prompt="time is up",  # words that call no tool: no chain of reminders
            )
            return {"reminderId": reminder.id}
    """,
    "agent/hooks/observe.py": """
        import json
        import os

        from agentkit import HookContext, define_hook


        def on_any(event, ctx: HookContext) -> None:
            with open(os.environ["EMULATOR_HOOK_LOG"], "a", encoding="utf-8") as f:
                f.write(json.dumps({"sessionId": event.session_id, "index": event.index,
                                    "type": event.type}) + "\\n")


        hook = define_hook(events={"*": on_any})
    """,
}


def write_agent(root: Path) -> Path:
    for rel, text in AGENT_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


@dataclass
class StandIn:
    """A loopback HTTP service recording each side effect by its key."""

    url: str = ""
    effects: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


@contextlib.contextmanager
def stand_in() -> Iterator[StandIn]:
    record = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            with record.lock:
                record.effects[body["key"]] += 1
                count = record.effects[body["key"]]
            data = json.dumps({"count": count}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    record.url = f"http://127.0.0.1:{server.server_address[1]}/effects"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield record
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Emulated:
    """A running `agentkit serve --emulate-aws`."""

    url: str
    proc: subprocess.Popen[str]
    hook_log: Path
    log_lines: list[str]
    control: str = ""  # the emulator's own loopback API (Lambda's invoke API and more)

    def call(
        self, method: str, path: str, body: Any = None, *, token: str | None = TOKEN
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def events(self, session_id: str) -> list[dict[str, Any]]:
        request = urllib.request.Request(
            f"{self.url}/v1/session/{session_id}/events?startIndex=0",
            headers={"authorization": f"Bearer {TOKEN}"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return [json.loads(line) for line in response.read().splitlines() if line.strip()]

    def status(self, session_id: str) -> str:
        return self.statuses().get(session_id, "unknown")

    def statuses(self) -> dict[str, str]:
        """Every session's status, by id: one listing, page by page."""
        found: dict[str, str] = {}
        path = "/v1/sessions?limit=200"
        while True:
            code, body = self.call("GET", path)
            assert code == 200, body
            found.update({str(i["sessionId"]): str(i["status"]) for i in body["sessions"]})
            if not body.get("cursor"):
                return found
            path = f"/v1/sessions?limit=200&cursor={urllib.parse.quote(body['cursor'])}"

    def hook_calls(self) -> list[dict[str, Any]]:
        if not self.hook_log.exists():
            return []
        return [json.loads(x) for x in self.hook_log.read_text().splitlines() if x.strip()]

    def wait_quiet(self, timeout: float) -> bool:
        """Until the emulator has nothing running or pending (no invocation, no delivery or
        retry waiting, every hook batch delivered): it answers when that holds."""
        with urllib.request.urlopen(
            f"{self.control}/emulator/quiet?timeout={timeout:g}", timeout=timeout + 30
        ) as response:
            return bool(json.loads(response.read())["quiet"])

    def chaos_lines(self) -> list[str]:
        return [line for line in self.log_lines if "chaos seed=" in line]


@contextlib.contextmanager
def emulated(
    project: Path, standin: StandIn, *extra: str, startup_timeout: float = 180.0
) -> Iterator[Emulated]:
    """Start the emulator on a free port; its first JSON line on stderr says where."""
    hook_log = project / "hooks.ndjson"
    env = dict(os.environ, STANDIN_URL=standin.url, EMULATOR_HOOK_LOG=str(hook_log))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentkit.cli",
            "serve",
            "--dir",
            str(project),
            "--emulate-aws",
            "--bearer-token",
            TOKEN,
            "--port",
            "0",
            "--time-scale",
            "0.05",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    lines: list[str] = []
    ready = threading.Event()
    url: list[str] = []
    control: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if line.startswith('{"emulating"'):
                announced = json.loads(line)
                url.append(announced["url"])
                control.append(announced.get("control") or "")
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        ready.wait(startup_timeout)
        if not url:
            raise RuntimeError("the emulator did not start:\n" + "".join(lines[-40:]))
        yield Emulated(url[0], proc, hook_log, lines, control[0])
    finally:
        if proc.poll() is not None:  # it died under the test: say why
            print("the emulator exited early:\n" + "".join(lines[-60:]), file=sys.stderr)
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for(predicate: Any, timeout: float, what: str) -> Any:
    """Poll the emulated API until `predicate()` is truthy (the API is the thing waited on)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)
