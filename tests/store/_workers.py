"""Code run in separate processes (spawned) by the file-store tests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentkit.events import MessageAppended, draft
from agentkit.store.files import FileStore


def append_many(root: str, session_id: str, writer: int, count: int, barrier: Any) -> None:
    """Append `count` events tagged `<writer>:<i>` through a FileStore of this process."""

    async def run() -> None:
        store = FileStore(Path(root))
        if barrier is not None:
            barrier.wait()
        for i in range(count):
            await store.append(session_id, [draft(MessageAppended(text=f"{writer}:{i}"))])
        await store.close()

    asyncio.run(run())


def append_batches(root: str, session_id: str, batches: int, size: int) -> None:
    """Append `batches` batches of `size` events, each labelled `<batch>.<i>`."""

    async def run() -> None:
        store = FileStore(Path(root))
        for b in range(batches):
            await store.append(
                session_id, [draft(MessageAppended(text=f"{b}.{i}")) for i in range(size)]
            )
        await store.close()

    asyncio.run(run())


def append_forever(root: str, session_id: str, size: int) -> None:
    """Append events of about `size` bytes, alternating single events and batches of 3,
    until killed."""

    async def run() -> None:
        store = FileStore(Path(root))
        n = 0
        while True:
            count = 1 + 2 * (n % 2)
            await store.append(
                session_id,
                [draft(MessageAppended(text=f"{n}.{i}:" + "x" * size)) for i in range(count)],
            )
            n += 1

    asyncio.run(run())
