"""A project whose tools touch the world (a file, a stand-in server), a session recorded on
it with a scripted model into a file-backed state folder, and copies of the project with
one seeded regression each."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.events import Event
from agentkit.hooks import LocalHookFanout
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal
from agentkit.store.base import Store
from agentkit.store.files import FileStore
from tests.fixtures.project_tree import write_tree

OWNER = Principal("alice")

FILES = {
    "agent/agent.py": """
        from agentkit import define_agent
        agent = define_agent(model="test", max_steps=8)
    """,
    "agent/instructions.md": "You help with trips.\n",
    "agent/tools/get_weather.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool

        class WeatherInput(BaseModel):
            city: str

        @define_tool(description="The weather of a city.")
        def get_weather(input: WeatherInput, ctx: ToolContext) -> dict:
            return {"city": input.city, "condition": "sunny"}
    """,
    # Touches the world: writes the file REPLAY_NOTE_FILE names.
    "agent/tools/save_note.py": """
        import os
        from pathlib import Path
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool

        class NoteInput(BaseModel):
            text: str

        @define_tool(description="Save a note.")
        def save_note(input: NoteInput, ctx: ToolContext) -> dict:
            Path(os.environ["REPLAY_NOTE_FILE"]).write_text(input.text)
            return {"saved": True}
    """,
    # Touches the world: calls the stand-in server REPLAY_STANDIN_URL names.
    "agent/tools/ping_server.py": """
        import os
        import urllib.request
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool

        class PingInput(BaseModel):
            host: str

        @define_tool(description="Ping the booking server.")
        def ping_server(input: PingInput, ctx: ToolContext) -> dict:
            with urllib.request.urlopen(os.environ["REPLAY_STANDIN_URL"], timeout=5) as r:
                return {"status": r.status}
    """,
    "agent/tools/book_trip.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool

        class BookInput(BaseModel):
            number: int

        @define_tool(description="Book trip N.", needs_approval=True)
        def book_trip(input: BookInput, ctx: ToolContext) -> dict:
            return {"booked": input.number}
    """,
    # Touches the world: every recorded event appends a line to REPLAY_HOOK_FILE.
    "agent/hooks/mirror.py": """
        import os
        from agentkit import define_hook

        def mirror(event, ctx) -> None:
            with open(os.environ["REPLAY_HOOK_FILE"], "a") as f:
                f.write(event.type + "\\n")

        hook = define_hook(events={"*": mirror})
    """,
    "agent/subagents/guide/agent.py": """
        from agentkit import define_agent
        agent = define_agent(description="Knows about cities.")
    """,
    "agent/subagents/guide/instructions.md": "You know cities.\n",
}

SCRIPT = [
    Step.tool_calls(call("get_weather", {"city": "Paris"}, id="c_weather")),
    Step.tool_calls(
        call("save_note", {"text": "pack an umbrella"}, id="c_note"),
        call("ping_server", {"host": "booking"}, id="c_ping"),
    ),
    Step.tool_calls(
        call("task", {"subagent": "guide", "prompt": "Tell me of Paris."}, id="c_task")
    ),
    Step.text("Paris has the Louvre."),  # the guide's own answer
    Step.tool_calls(call("book_trip", {"number": 7}, id="c_book")),
    Step.text("Booked trip 7: sunny in Paris, note saved."),
]


class StandIn:
    """A loopback HTTP server that counts the requests it gets."""

    def __init__(self) -> None:
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.hits += 1
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def standin() -> Iterator[StandIn]:
    server = StandIn()
    yield server
    server.close()


@dataclass
class Recorded:
    project: Path
    state: Path
    events: list[Event]
    note: Path
    hooked: Path

    def index_of(self, type_: str, **data: object) -> int:
        """The index of the first recorded event of `type_` whose data has these values."""
        for e in self.events:
            if e.type == type_ and all(e.data.get(k) == v for k, v in data.items()):
                return e.index
        raise AssertionError(f"no {type_} {data}")

    def requested(self, call_id: str) -> int:
        for e in self.events:
            if e.type == "actions.requested" and any(
                a["callId"] == call_id for a in e.data["actions"]
            ):
                return e.index
        raise AssertionError(f"no actions.requested for {call_id}")

    def variant(self, name: str, change: Callable[[Path], None]) -> AgentBundle:
        """A copy of the project with `change` applied to it (a new bundle to replay on)."""
        copy = self.project.parent / name
        shutil.copytree(self.project, copy, ignore=shutil.ignore_patterns(".agentkit"))
        change(copy)
        return AgentBundle.discover(copy)


async def record_session(bundle: AgentBundle, store: Store, state: Path) -> list[Event]:
    """Run SCRIPT as one session on `store`: one message, then approve the parked call."""
    model = ScriptedModel(SCRIPT)
    hooks = LocalHookFanout.from_bundle(bundle)
    rt = AgentRuntime(
        bundle, store, fanout=hooks, model_resolver=lambda _id: model, state_root=state
    )
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    accepted = await rt.start_session("Plan my trip to Paris.", principal=OWNER)
    await dispatcher.drain()
    await rt.resolve_approval(accepted.session_id, "c_book", "approve", principal=OWNER)
    await dispatcher.drain()
    await hooks.drain()  # every event handed to the hooks, then stop them
    await hooks.close()
    assert model.remaining == 0
    return await store.read(accepted.session_id)


@pytest.fixture
async def recorded(tmp_path: Path, standin: StandIn, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    note = tmp_path / "note.txt"
    monkeypatch.setenv("REPLAY_NOTE_FILE", str(note))
    monkeypatch.setenv("REPLAY_STANDIN_URL", standin.url)
    hooked = tmp_path / "hooked.txt"
    monkeypatch.setenv("REPLAY_HOOK_FILE", str(hooked))
    project = write_tree(tmp_path / "trip", FILES)
    state = project / ".agentkit"
    store = FileStore(state)
    try:
        events = await record_session(AgentBundle.discover(project), store, state)
    finally:
        await store.close()
    assert note.read_text() == "pack an umbrella" and standin.hits == 1  # the world, touched
    assert events[-2].type == "turn.completed", [e.type for e in events]
    assert "turn.completed" in hooked.read_text()  # and the hook saw it
    note.unlink()
    hooked.unlink()
    return Recorded(project, state, events, note, hooked)
