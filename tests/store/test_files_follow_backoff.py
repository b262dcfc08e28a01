"""Without the file watch, the file store's check for other processes' appends backs off
while a followed session stays quiet, and the back-off goes on from one `follow` to the next
(a stream tail follows in rounds): only an append starts it over."""

from __future__ import annotations

from pathlib import Path

from agentkit.events import Event, MessageAppended, draft
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.files import FileStore


class CountingStore(FileStore):
    """Counts the looks `follow` takes at a session's file (each is a check)."""

    checks = 0

    def _read_here(self, session_id: str, start: int, limit: int | None) -> list[Event] | None:
        self.checks += 1
        return super()._read_here(session_id, start, limit)


async def quiet_round(store: CountingStore, sid: str, start: int) -> int:
    before = store.checks
    assert await store.follow(sid, start, 1.2) == []
    return store.checks - before


async def test_a_quiet_session_is_checked_ever_less_often_across_follows(tmp_path: Path) -> None:
    store = CountingStore(tmp_path, poll_interval=0.02, max_poll_interval=0.3, watch_appends=False)
    try:
        sid = new_session_id()
        await store.create_session(SessionRecord(id=sid))
        await store.append(sid, [draft(MessageAppended(text="a"))])
        first = await quiet_round(store, sid, 1)  # 0.02 s doubling to 0.3 s: ~8 checks
        second = await quiet_round(store, sid, 1)  # at 0.3 s from the start: ~5
        assert second < first
        # An append starts the back-off over: the next quiet round checks as often as the first.
        await store.append(sid, [draft(MessageAppended(text="b"))])
        assert [e.index for e in await store.follow(sid, 1, 1.0)] == [1]
        assert await quiet_round(store, sid, 2) > second
    finally:
        await store.close()
