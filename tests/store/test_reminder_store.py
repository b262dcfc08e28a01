"""The `ReminderStore` contract: every adapter (memory, files, DynamoDB) passes these same tests."""

from __future__ import annotations

import pytest

from agentkit.errors import InvalidId
from agentkit.sessions import new_session_id
from agentkit.store.base import ReminderStore
from tests.store.conftest import HOSTILE_IDS, Harness, reminder


async def test_the_adapter_implements_the_reminder_store_protocol(harness: Harness) -> None:
    assert isinstance(harness.store, ReminderStore)


# reminders


async def test_reminders_can_be_created_read_listed_replaced_and_deleted(
    harness: Harness,
) -> None:
    store = harness.store
    first = reminder("rem_first", created_at="2026-01-01T00:00:00.000Z")
    second = reminder("rem_second", kind="cron", spec="0 9 * * 1-5", session_id=new_session_id())

    await store.put_reminder(first)
    await store.put_reminder(second)
    assert await store.get_reminder("rem_first") == first
    assert await harness.reopen().get_reminder("rem_second") == second
    assert {r.id for r in await store.list_reminders()} == {"rem_first", "rem_second"}

    await store.put_reminder(reminder("rem_first", status="cancelled", reason="user"))
    replaced = await store.get_reminder("rem_first")
    assert replaced is not None and replaced.status == "cancelled"
    assert [r.id for r in await store.list_reminders(active_only=True)] == ["rem_second"]

    assert await store.delete_reminder("rem_first")
    assert not await store.delete_reminder("rem_first")
    assert await store.get_reminder("rem_first") is None
    assert [r.id for r in await store.list_reminders()] == ["rem_second"]


async def test_a_reminder_keeps_its_creator_and_delivery_failures(harness: Harness) -> None:
    sid = new_session_id()
    made = reminder(
        "rem_owned",
        session_id=sid,
        principal="bearer:alice",
        created_in=sid,
        failures=2,
        last_error="StoreError: throttled",
    )
    await harness.store.put_reminder(made)
    back = await harness.reopen().get_reminder("rem_owned")
    assert back == made
    assert back is not None and back.principal == "bearer:alice" and back.failures == 2


@pytest.mark.parametrize("bad", [*HOSTILE_IDS, ".hidden", "a" * 200])
async def test_hostile_reminder_ids_are_rejected(harness: Harness, bad: str) -> None:
    with pytest.raises(InvalidId):
        await harness.store.put_reminder(reminder(bad))
    with pytest.raises(InvalidId):
        await harness.store.get_reminder(bad)
    with pytest.raises(InvalidId):
        await harness.store.delete_reminder(bad)
