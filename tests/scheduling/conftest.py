"""A real agent project, runtime and memory store for schedule and reminder tests."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agentkit.authoring.contexts import HostServices
from agentkit.engine.runtime import AgentRuntime
from agentkit.events import Event
from agentkit.models import resolve_model
from agentkit.project.bundle import AgentBundle
from agentkit.scheduling.local import LocalScheduling
from agentkit.scheduling.timer import ManualClock
from agentkit.store.files import FileStore
from agentkit.store.memory import MemoryStore

ALERTS = """
from agentkit import define_schedule


async def check(ctx):
    ctx.wait_until(ctx.receive("webhook", message="Check for critical alerts.", auth=ctx.app_auth))


schedule = define_schedule(cron="*/30 * * * *", run=check)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    (agent / "schedules").mkdir(parents=True)
    (agent / "instructions.md").write_text("You are a test agent.\n")
    (agent / "schedules" / "heartbeat.md").write_text(
        '---\ncron: "0 9 * * 1-5"\n---\n\nSummarize open incidents.\n'
    )
    (agent / "schedules" / "alerts.py").write_text(textwrap.dedent(ALERTS))
    return tmp_path


class Rig:
    """One agent wired like `serve`: runtime, store, manual clock and local scheduling."""

    def __init__(
        self,
        project: Path,
        tmp: Path,
        *,
        dev: bool,
        model: Any = None,
        store: Any = None,
        clock: ManualClock | None = None,
        **kw: Any,
    ):
        self.bundle = AgentBundle.discover(project)
        assert not self.bundle.manifest.has_errors, self.bundle.manifest.diagnostics
        self.store = store if store is not None else MemoryStore()
        self.clock = clock or ManualClock()
        self.services = HostServices()
        resolver: Callable[[str | None], Any] = (lambda _id: model) if model else resolve_model
        self.runtime = AgentRuntime(
            self.bundle,
            self.store,
            host_services=self.services,
            model_resolver=resolver,
            state_root=tmp / "state",
            **kw,
        )
        self.scheduling = LocalScheduling(
            self.store,
            self.runtime,
            definitions=self.bundle,
            host=self.services,
            dev=dev,
            clock=self.clock,
        )

    async def wait_for(self, session_id: str, type_: str, *, after: int = 0) -> Event:
        """The first event of `type_` at index >= `after`, waiting on the store (no sleeps)."""
        start = after
        for _ in range(200):
            events = await self.store.follow(session_id, start, timeout=10)
            for event in events:
                if event.type == type_:
                    return event
            if events:
                start = events[-1].index + 1
        raise AssertionError(f"no {type_} in {session_id}")

    async def events(self, session_id: str) -> list[Event]:
        return await self.store.read(session_id)


@pytest.fixture
async def rig(project: Path, tmp_path: Path) -> AsyncIterator[Rig]:
    r = Rig(project, tmp_path, dev=False)
    await r.scheduling.start()
    yield r
    await r.scheduling.aclose()


@pytest.fixture
async def dev_rig(project: Path, tmp_path: Path) -> AsyncIterator[Rig]:
    r = Rig(project, tmp_path, dev=True)
    await r.scheduling.start()
    yield r
    await r.scheduling.aclose()


@pytest.fixture
def store_kind(request: pytest.FixtureRequest) -> str:
    """The store the hosts of a test share: the file store unless a test asks for another."""
    return str(getattr(request, "param", "files"))


@pytest.fixture
def started(
    tmp_path: Path, store_kind: str, request: pytest.FixtureRequest
) -> Callable[[Path, datetime], Rig]:
    """`started(project, now)`: a host on state shared with the hosts started before it
    (a file store folder, or DynamoDB tables), its clock at `now` (no dev mode)."""
    tables: list[Any] = []

    def open_store() -> Any:
        if store_kind == "files":
            return FileStore(tmp_path / "state")
        factory = request.getfixturevalue("dynamodb_store_factory")
        store = factory(settings=tables[0]) if tables else factory()
        tables[:] = [store.settings]
        return store

    def make(project: Path, now: datetime) -> Rig:
        return Rig(project, tmp_path, dev=False, store=open_store(), clock=ManualClock(now))

    return make
