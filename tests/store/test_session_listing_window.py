"""Listing sessions inside a window of creation times: every adapter pages it the same way,
and DynamoDB reads only the window (a key condition on the listing index, never a scan)."""

from __future__ import annotations

from typing import Any

import pytest

from agentkit.sessions import SessionRecord
from agentkit.store.ids import created_ms
from agentkit.store.listing import StartedWindow
from tests.store.conftest import Harness


def at(second: int) -> str:
    return f"2026-03-01T12:00:{second:02d}.000Z"


async def made_at(harness: Harness, principal: str, seconds: range) -> list[SessionRecord]:
    return [
        await harness.new_session(principal=principal, created_at=at(s), updated_at=at(s))
        for s in seconds
    ]


async def list_all(
    harness: Harness, principal: str | None, started: StartedWindow, limit: int
) -> list[SessionRecord]:
    seen: list[SessionRecord] = []
    cursor: str | None = None
    while True:
        page = await harness.store.list_sessions(
            principal, limit=limit, cursor=cursor, started=started
        )
        assert len(page.items) <= limit
        seen.extend(page.items)
        cursor = page.cursor
        if cursor is None:
            return seen


async def test_a_window_lists_the_sessions_started_inside_it_newest_first(
    harness: Harness,
) -> None:
    made = await made_at(harness, "ada", range(10))
    await made_at(harness, "bob", range(10))
    window = StartedWindow(after_ms=created_ms(at(3)), before_ms=created_ms(at(7)))

    seen = await list_all(harness, "ada", window, limit=2)

    # After is inclusive, before exclusive: seconds 3, 4, 5 and 6, each once.
    assert [r.id for r in seen] == [r.id for r in reversed(made[3:7])]


async def test_a_window_applies_to_the_listing_of_every_session(harness: Harness) -> None:
    ada = await made_at(harness, "ada", range(4))
    bob = await made_at(harness, "bob", range(4))
    seen = await list_all(harness, None, StartedWindow(after_ms=created_ms(at(2))), limit=3)
    assert {r.id for r in seen} == {r.id for r in ada[2:] + bob[2:]}


async def test_an_open_ended_before_window_lists_the_oldest(harness: Harness) -> None:
    made = await made_at(harness, "ada", range(5))
    seen = await list_all(harness, "ada", StartedWindow(before_ms=created_ms(at(2))), limit=5)
    assert [r.id for r in seen] == [made[1].id, made[0].id]


async def test_an_empty_window_lists_nothing(harness: Harness) -> None:
    await made_at(harness, "ada", range(3))
    ms = created_ms(at(2))
    page = await harness.store.list_sessions(
        "ada", started=StartedWindow(after_ms=ms, before_ms=ms)
    )
    assert (page.items, page.cursor) == ([], None)


async def test_dynamodb_reads_only_the_window_from_the_index(harness: Harness) -> None:
    if harness.kind != "dynamodb":
        pytest.skip("a DynamoDB read count")
    await made_at(harness, "ada", range(40))
    client: Any = harness.store._caller.client  # type: ignore[attr-defined]
    scanned: list[int] = []
    scans: list[str] = []

    def after_query(parsed: dict[str, Any], **_: Any) -> None:
        scanned.append(int(parsed.get("ScannedCount", 0)))

    client.meta.events.register("after-call.dynamodb.Query", after_query)
    client.meta.events.register("before-call.dynamodb.Scan", lambda **_: scans.append("scan"))
    window = StartedWindow(after_ms=created_ms(at(30)), before_ms=created_ms(at(35)))

    seen = await list_all(harness, "ada", window, limit=10)

    assert len(seen) == 5
    assert scans == []
    # The 35 sessions outside the window are never read: a key condition, not a filter.
    assert sum(scanned) <= 5
