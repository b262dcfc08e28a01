"""Where recorded sessions come from: a store (a local state folder, or any `Store`) or a
running host over HTTP (`GET /v1/sessions`, then each session's events)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentkit.events import Event
from agentkit.sessions import SessionRecord
from agentkit.store.base import Store

if TYPE_CHECKING:
    import httpx

__all__ = [
    "RecordedSession",
    "host_session",
    "host_sessions",
    "state_dir",
    "store_session",
    "store_sessions",
]


@dataclass(frozen=True, slots=True)
class RecordedSession:
    session_id: str
    events: list[Event]


def state_dir(root: Path, slug: str) -> Path:
    """The agent's state folder under `--state-root`: `root` itself when it holds sessions
    (a project's `.agentkit/`), else `root/<slug>/` as `agentkit serve --state-root` uses."""
    return root if (root / "sessions").is_dir() else root / slug


async def store_sessions(store: Store, last: int) -> list[RecordedSession]:
    """The `last` most recently created sessions of `store`, newest first."""
    records: list[SessionRecord] = []
    cursor: str | None = None
    while True:
        page = await store.list_sessions(None, limit=100, cursor=cursor)
        records.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            break
    records.sort(key=lambda r: r.created_at, reverse=True)
    return [RecordedSession(r.id, await store.read(r.id)) for r in records[:last]]


async def store_session(store: Store, session_id: str) -> RecordedSession:
    events = await store.read(session_id)
    if not events:
        raise LookupError(f"no session {session_id!r} in the store")
    return RecordedSession(session_id, events)


async def host_sessions(
    url: str, token: str | None, last: int, *, transport: httpx.AsyncBaseTransport | None = None
) -> list[RecordedSession]:
    """The `last` most recent sessions the token may read on the host at `url`."""
    from agentkit.client import AsyncClient

    async with AsyncClient(url, token, transport=transport) as client:
        ids: list[str] = []
        async for summary in client.sessions(page_size=min(100, max(1, last))):
            ids.append(summary.session_id)
            if len(ids) >= last:
                break
        return [RecordedSession(sid, await client.dump(sid)) for sid in ids]


async def host_session(
    url: str,
    token: str | None,
    session_id: str,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
) -> RecordedSession:
    from agentkit.client import AsyncClient

    async with AsyncClient(url, token, transport=transport) as client:
        return RecordedSession(session_id, await client.dump(session_id))
