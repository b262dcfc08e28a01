"""A schedule's ledger (its last fired slot and missed slots) on every store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentkit.scheduling.catch_up import SlotLedger
from tests.store.conftest import Harness

ONE = datetime(2030, 1, 7, 1, 0, tzinfo=UTC)


async def test_the_last_fired_slot_survives_a_reopen(harness: Harness) -> None:
    assert (await SlotLedger(harness.store).load("hourly")).last_slot is None
    await SlotLedger(harness.store).fired("hourly", ONE)
    assert (await SlotLedger(harness.reopen()).load("hourly")).last_slot == ONE


async def test_missed_slots_are_kept_with_what_was_done(harness: Harness) -> None:
    ledger = SlotLedger(harness.store)
    await ledger.fired("hourly", ONE)
    missed = [ONE + timedelta(hours=h) for h in (1, 2, 3)]
    await ledger.note_missed("hourly", missed, 3, missed[-1:], "once", ONE + timedelta(hours=3))
    kept = await SlotLedger(harness.reopen()).load("hourly")
    assert kept.last_slot == missed[-1]
    assert [(m["slot"], m["action"]) for m in kept.missed] == [
        (missed[0].isoformat(), "skipped"),
        (missed[1].isoformat(), "skipped"),
        (missed[2].isoformat(), "fired"),
    ]
    assert (await ledger.load("daily")).missed == []  # one record per schedule
