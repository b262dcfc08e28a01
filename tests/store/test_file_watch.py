"""The file store hears of another process's appends from the kernel (`store._filewatch`),
not from its followers' own checks: a follower whose checks are a minute apart still gets
an append made by a separate process at once, through a plain `events.ndjson` on disk."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from agentkit.events import MessageAppended, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.files import FileStore

APPEND = """
import asyncio, sys
from agentkit.events import MessageAppended, draft
from agentkit.store.files import FileStore

async def main() -> None:
    store = FileStore(sys.argv[1], watch_appends=False)
    await store.append(sys.argv[2], [draft(MessageAppended(text="from elsewhere"))])
    await store.close()

asyncio.run(main())
"""


async def wait_live(store: FileStore, sid: str) -> None:
    # The first follow starts the watch; it reports itself in place within about a second.
    for _ in range(300):
        watch = store._watch
        if watch is not None and watch.live:
            return
        assert await store.follow(sid, 1, 0.02) == []
    raise AssertionError("the file watch never came up")


async def test_another_processs_append_reaches_a_follower_that_seldom_checks(
    tmp_path: Path,
) -> None:
    # Checks a minute apart: without the watch the follow below would time out empty.
    store = FileStore(tmp_path, poll_interval=60.0, max_poll_interval=60.0)
    try:
        sid = new_session_id()
        await store.create_session(SessionRecord(id=sid))
        await store.append(sid, [draft(MessageAppended(text="here"))])
        await wait_live(store, sid)
        follow = asyncio.ensure_future(store.follow(sid, 1, 120.0))
        writer = await asyncio.create_subprocess_exec(
            sys.executable, "-c", APPEND, str(tmp_path), sid
        )
        assert await writer.wait() == 0
        # Well before the follower's own next check (a minute) or the follow's end.
        events = await asyncio.wait_for(follow, 30.0)
        assert [(e.index, e.data["text"]) for e in events] == [(1, "from elsewhere")]
    finally:
        await store.close()


async def test_without_the_watch_followers_check_for_themselves(tmp_path: Path) -> None:
    store = FileStore(tmp_path, poll_interval=0.05, max_poll_interval=0.2, watch_appends=False)
    try:
        sid = new_session_id()
        await store.create_session(SessionRecord(id=sid))
        follow = asyncio.ensure_future(store.follow(sid, 0, 30.0))
        writer = await asyncio.create_subprocess_exec(
            sys.executable, "-c", APPEND, str(tmp_path), sid
        )
        assert await writer.wait() == 0
        assert [e.data["text"] for e in await follow] == ["from elsewhere"]
        assert store._watch is None
    finally:
        await store.close()
