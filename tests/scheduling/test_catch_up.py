"""Schedules never miss silently: slots missed while `agentkit serve` was down are
recorded, and fired by the schedule's `catch_up` policy when it starts again. On the
manual clock, over the file store (the state `agentkit serve` keeps); each policy over the
DynamoDB store too (on a DynamoDB-API server), where the ledger lives in the state table."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.server.app import create_app
from agentkit.server.options import AgentMount, ServerOptions
from tests.scheduling.conftest import Rig

START = datetime(2030, 1, 7, 0, 30, tzinfo=UTC)  # a Monday, half past midnight


def hourly_project(root: Path, catch_up: str | None) -> Path:
    schedules = root / "agent" / "schedules"
    schedules.mkdir(parents=True)
    (root / "agent" / "instructions.md").write_text("You are a test agent.\n")
    policy = f"catch_up: {catch_up}\n" if catch_up else ""
    (schedules / "hourly.md").write_text(
        f'---\ncron: "0 * * * *"\n{policy}---\n\nWrite the hourly note.\n'
    )
    return root


async def stop(rig: Rig) -> None:
    await rig.scheduling.aclose()
    dispatcher = rig.runtime.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    await dispatcher.drain()
    await dispatcher.close()
    await rig.store.close()


async def sessions_of(rig: Rig) -> int:
    return len((await rig.store.list_sessions(None, limit=200)).items)


async def run_down_across_three_slots(
    project: Path, started: Callable[[Path, datetime], Rig]
) -> Rig:
    """Fire the 01:00 slot, stop the host over 02:00, 03:00 and 04:00, start it at 04:30."""
    first = started(project, START)
    await first.scheduling.start()
    await first.clock.advance(timedelta(hours=1))  # 01:00 fires on its cadence
    assert await sessions_of(first) == 1
    await stop(first)
    again = started(project, START + timedelta(hours=4))
    await again.scheduling.start()
    return again


@pytest.mark.parametrize("store_kind", ["files", "dynamodb"], indirect=True)
@pytest.mark.parametrize(
    ("policy", "fired"), [("skip", []), ("once", ["04:00"]), ("all", ["02:00", "03:00", "04:00"])]
)
async def test_slots_missed_while_down_are_caught_up_by_policy(
    tmp_path: Path, started: Callable[[Path, datetime], Rig], policy: str, fired: list[str]
) -> None:
    rig = await run_down_across_three_slots(hourly_project(tmp_path / "p", policy), started)
    try:
        assert await sessions_of(rig) == 1 + len(fired)
        [listed] = await rig.scheduling.list_schedules()
        assert listed["catchUp"] == policy
        missed = {m["slot"][11:16]: m["action"] for m in listed["missed"]}
        assert missed == {
            slot: ("fired" if slot in fired else "skipped") for slot in ("02:00", "03:00", "04:00")
        }
        assert listed["nextSlot"].startswith("2030-01-07T05:00")
        # The caught-up slots are dealt with: the next start misses nothing more.
        await rig.clock.advance(timedelta(minutes=30))  # 05:00 fires as usual
        assert await sessions_of(rig) == 2 + len(fired)
    finally:
        await stop(rig)


async def test_the_default_policy_is_once(
    tmp_path: Path, started: Callable[[Path, datetime], Rig]
) -> None:
    rig = await run_down_across_three_slots(hourly_project(tmp_path / "p", None), started)
    try:
        assert await sessions_of(rig) == 2
        [listed] = await rig.scheduling.list_schedules()
        assert listed["catchUp"] == "once"
    finally:
        await stop(rig)


async def test_all_fires_at_most_ten_and_records_the_rest(
    tmp_path: Path, started: Callable[[Path, datetime], Rig]
) -> None:
    project = hourly_project(tmp_path / "p", "all")
    first = started(project, START)
    await first.scheduling.start()
    await first.clock.advance(timedelta(hours=1))
    await stop(first)
    rig = started(project, START + timedelta(hours=16))  # 15 slots missed: 02:00 to 16:00
    await rig.scheduling.start()
    try:
        assert await sessions_of(rig) == 1 + 10
        [listed] = await rig.scheduling.list_schedules()
        fired = [m["slot"][11:16] for m in listed["missed"] if m["action"] == "fired"]
        assert fired == [f"{h:02d}:00" for h in range(7, 17)]
        assert [m.get("earlierSlots") for m in listed["missed"] if m["slot"] is None] == [5]
    finally:
        await stop(rig)


async def test_a_first_start_misses_nothing(
    tmp_path: Path, started: Callable[[Path, datetime], Rig]
) -> None:
    rig = started(hourly_project(tmp_path / "p", "all"), START)
    await rig.scheduling.start()
    try:
        assert await sessions_of(rig) == 0
        [listed] = await rig.scheduling.list_schedules()
        assert listed["missed"] == []
    finally:
        await stop(rig)


async def test_the_dev_listing_shows_the_missed_slots(
    tmp_path: Path, started: Callable[[Path, datetime], Rig]
) -> None:
    rig = await run_down_across_three_slots(hourly_project(tmp_path / "p", "once"), started)
    try:
        app = create_app(
            [AgentMount(slug=rig.bundle.slug, service=rig.runtime, host=rig.scheduling)],
            ServerOptions(mode="single", dev=True),
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            response = await c.get("/v1/dev/schedules")
        assert response.status_code == 200, response.text
        [listed] = response.json()["schedules"]
        assert listed["scheduleId"] == "hourly"
        assert [(m["slot"][11:16], m["action"]) for m in listed["missed"]] == [
            ("02:00", "skipped"),
            ("03:00", "skipped"),
            ("04:00", "fired"),
        ]
    finally:
        await stop(rig)
