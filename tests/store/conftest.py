"""One harness per store adapter, so the contract suite runs unchanged against each."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentkit.events import EventDraft, MessageAppended, draft
from agentkit.reminders import ReminderRecord
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.base import Store
from agentkit.store.memory import MemoryStore

HOSTILE_IDS = [
    "../x",
    "ses_../../../etc/passwd",
    "ses_" + "a" * 5000,
    "ses_ünïcødé_ünïcødé_ünïcødé",
    "ses_abcdefghijklmnop/qrs",
    "ses_abcdefghijklmnop\x00",
    "",
    "/tmp/ses_abcdefghijklmnop",
]


def note(text: str, turn_id: str | None = None) -> EventDraft:
    return draft(MessageAppended(text=text), turn_id=turn_id)


def reminder(reminder_id: str, **fields: object) -> ReminderRecord:
    base: dict[str, object] = {
        "id": reminder_id,
        "purpose": "check the build",
        "channel_id": "http",
        "continuation_token": "http:abc",
        "kind": "delay",
        "spec": "20m",
        "next_fire_at": "2026-01-01T00:20:00.000Z",
    }
    base.update(fields)
    return ReminderRecord(**base)  # type: ignore[arg-type]


class FakeClock:
    """Epoch seconds that only move when a test says so."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Harness:
    """A store under test, its clock, and a way to open a second store on the same state."""

    kind: str
    store: Store
    clock: FakeClock
    _reopen: Callable[[], Store]
    _opened: list[Store] = field(default_factory=list)

    def reopen(self) -> Store:
        """Another store over the same data (a restart, another process); memory: itself."""
        other = self._reopen()
        if other is not self.store:
            self._opened.append(other)
        return other

    async def new_session(self, **fields: Any) -> SessionRecord:
        record = SessionRecord(id=new_session_id(), **fields)
        await self.store.create_session(record)
        return record

    async def aclose(self) -> None:
        for other in self._opened:
            await other.close()
        await self.store.close()


# "files-fsync": the file store flushing every write to disk, whose writes take the
# worker-thread paths (a flush is too slow for the event loop) and the atomic record write.
# "files-uncached": the file store with its caches off, every read parsing the files again,
# so the fast paths and the slow one each answer the whole contract.
# The file store's run of the contract is part of `make smoke`.
@pytest.fixture(
    params=[
        "memory",
        pytest.param("files", marks=pytest.mark.smoke),
        "files-fsync",
        "files-uncached",
        "dynamodb",
    ]
)
async def harness(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    clock = FakeClock()
    kind = request.param
    if kind == "memory":
        memory = MemoryStore(clock=clock)
        made = Harness(kind, memory, clock, lambda: memory)
    elif kind.startswith("files"):
        from agentkit.store.files import FileStore

        root = tmp_path / "state"
        options = {"fsync": kind == "files-fsync", "caches": kind != "files-uncached"}
        made = Harness(
            kind,
            FileStore(root, clock=clock, **options),
            clock,
            lambda: FileStore(root, clock=clock, **options),
        )
    else:
        from agentkit.store._s3blobs import S3Blobs

        factory = request.getfixturevalue("dynamodb_store_factory")
        # Large payloads go to S3 as deployed (a bucket on the same moto server).
        blobs = S3Blobs(request.getfixturevalue("s3_client"), request.getfixturevalue("s3_bucket"))
        first = factory(clock=clock, blobs=blobs)
        made = Harness(
            kind,
            first,
            clock,
            lambda: factory(settings=first.settings, clock=clock, blobs=blobs),
        )
    try:
        yield made
    finally:
        await made.aclose()
