"""An agent project on disk, a runtime over either store, and a way to simulate a restart."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.events import PAYLOADS, Event
from agentkit.models.base import Model
from agentkit.models.scripted import ScriptedModel, Step
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal
from agentkit.store.base import Store
from agentkit.store.files import FileStore
from agentkit.store.memory import MemoryStore

ALICE = Principal("alice")
BOB = Principal("bob")

FILES = {
    "agent/instructions.md": "# Test agent\n\nYou are a test agent.\n",
    "agent/agent.py": """
        from agentkit import define_agent
        agent = define_agent(max_steps=4, tool_timeout=5)
    """,
    "agent/tools/get_weather.py": """
        from pydantic import BaseModel, Field
        from agentkit import define_tool, ToolContext

        class WeatherInput(BaseModel):
            city: str = Field(description="City name")

        @define_tool(description="Get the weather for a city.")
        async def get_weather(input: WeatherInput, ctx: ToolContext) -> dict:
            session = ctx.session.id if ctx.session else None
            return {"city": input.city, "tempC": 21, "session": session}
    """,
    "agent/tools/add.py": """
        from pydantic import BaseModel
        from agentkit import define_tool

        class AddInput(BaseModel):
            a: int
            b: int

        @define_tool(description="Add two integers (a sync tool).")
        def add(input: AddInput, ctx) -> int:
            return input.a + input.b
    """,
    "agent/tools/boom.py": """
        from pydantic import BaseModel
        from agentkit import define_tool

        class BoomInput(BaseModel):
            reason: str = "no reason"

        @define_tool(description="Always fails.")
        def boom(input: BoomInput, ctx) -> str:
            raise RuntimeError("kaboom: " + input.reason)
    """,
    "agent/tools/deploy.py": """
        from pydantic import BaseModel
        from agentkit import define_tool

        CALLS = []

        class DeployInput(BaseModel):
            env: str

        @define_tool(description="Deploy to an environment.", needs_approval=True)
        def deploy(input: DeployInput, ctx) -> dict:
            CALLS.append(input.env)
            return {"deployed": input.env}
    """,
    "agent/tools/nap.py": """
        import asyncio
        from pydantic import BaseModel
        from agentkit import define_tool

        class NapInput(BaseModel):
            seconds: float

        @define_tool(description="Sleep a little, then answer.")
        async def nap(input: NapInput, ctx) -> str:
            await asyncio.sleep(input.seconds)
            return "rested"
    """,
    "agent/tools/write_note.py": """
        from pathlib import Path
        from pydantic import BaseModel
        from agentkit import define_tool

        class NoteInput(BaseModel):
            name: str
            text: str

        @define_tool(description="Write a note file in the workspace.", execution="agent")
        def write_note(input: NoteInput, ctx) -> dict:
            Path(input.name).write_text(input.text)
            return {"wrote": input.name, "cwd_has_agents_md": Path("AGENTS.md").exists()}
    """,
    "agent/skills/checklist.md": """
        ---
        description: Use when a release needs the checklist.
        ---
        # Release checklist

        1. Check the weather.
    """,
    "agent/subagents/researcher/agent.py": """
        from agentkit import define_agent
        agent = define_agent(description="Background research on cities.")
    """,
    "agent/subagents/researcher/instructions.md": "You research cities.\n",
    "agent/sandbox/workspace/seed.txt": "seeded\n",
}


def write_project(root: Path, files: dict[str, str] = FILES) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


@dataclass
class Env:
    """A runtime over a store; `restart()` builds a new runtime (and store) on the same data."""

    kind: str
    bundle: AgentBundle
    state: Path
    memory: MemoryStore | None = None
    runtimes: list[AgentRuntime] = field(default_factory=list)
    stores: list[Store] = field(default_factory=list)

    def new_store(self) -> Store:
        if self.kind == "memory":
            assert self.memory is not None
            return self.memory  # the same data; a memory store cannot outlive its process
        store = FileStore(self.state)
        self.stores.append(store)
        return store

    def new_store_on(self, clock: Callable[[], float]) -> Store:
        """A fresh store of this kind whose leases and expiries read `clock`."""
        if self.kind == "memory":
            return MemoryStore(clock=clock)
        store = FileStore(self.state, clock=clock)
        self.stores.append(store)
        return store

    def runtime(
        self, model: Model | Iterable[Step], store: Store | None = None, **options: Any
    ) -> AgentRuntime:
        m = model if not isinstance(model, list | tuple) else ScriptedModel(model)
        rt = AgentRuntime(
            self.bundle,
            store if store is not None else self.new_store(),
            model_resolver=lambda _id: m,  # type: ignore[arg-type,return-value]
            state_root=self.state,
            **options,
        )
        self.runtimes.append(rt)
        return rt


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "proj")


@pytest.fixture(params=["memory", "files"])
async def env(request: pytest.FixtureRequest, project: Path, tmp_path: Path) -> AsyncIterator[Env]:
    bundle = AgentBundle.discover(project)
    assert not bundle.manifest.has_errors, bundle.manifest.diagnostics
    e = Env(request.param, bundle, tmp_path / "state", MemoryStore())
    yield e
    for rt in e.runtimes:
        d = rt.dispatcher
        if isinstance(d, LocalDispatcher):
            await d.close()
    for s in e.stores:
        await s.close()


class StoreClock:
    """A store's clock (leases expire by it) that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def settle(rt: AgentRuntime) -> None:
    """Wait for every turn the runtime dispatched (no sleeping)."""
    d = rt.dispatcher
    assert isinstance(d, LocalDispatcher)
    await d.drain()


def types(events: Iterable[Event]) -> list[str]:
    return [e.type for e in events]


def check_vocabulary(events: list[Event]) -> None:
    """Every event parses with its typed payload; indexes are gap-free from 0."""
    assert [e.index for e in events] == list(range(len(events)))
    for e in events:
        assert e.type in PAYLOADS, e.type
        assert e.payload() is not None


def turn_events(events: list[Event], turn_id: str) -> list[str]:
    """Types of one turn's events, with the coalesced deltas folded into one marker."""
    out: list[str] = []
    for e in events:
        if e.turn_id != turn_id and e.type not in (
            "session.waiting",
            "session.completed",
            "session.failed",
        ):
            continue
        if out and e.type == out[-1] and e.type.endswith(".appended"):
            continue
        out.append(e.type)
    return out
