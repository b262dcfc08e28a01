"""The turn timeline: a waterfall drawn from a turn's recorded events, on an opened trace
file and live while a turn streams. Bars come in order, nest subagents under their task
call, and measure what the events recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import Served
from tests.playground.conftest import Shot
from tests.playground.test_playground import open_playground, send, session_id, wait_turns_done
from tests.playground.traces import parallel_turn, write_trace
from tests.server.helpers import dump

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")


def rows(page: Any) -> list[dict[str, str]]:
    found: list[dict[str, str]] = page.locator(".tl-row").evaluate_all(
        "(nodes) => nodes.map((n) => ({...n.dataset}))"
    )
    return found


def bar_ms(page: Any, row_id: str, segment: str, span_ms: float) -> float:
    """A bar's drawn width, turned back into milliseconds by its track's width."""
    row = page.locator(f".tl-row[data-id='{row_id}']")
    track = row.locator(".tl-track").bounding_box()
    bar = row.locator(f".tl-bar[data-segment={segment}]").bounding_box()
    assert track and bar
    return bar["width"] / track["width"] * span_ms


def bar_left_ms(page: Any, row_id: str, segment: str, span_ms: float) -> float:
    row = page.locator(f".tl-row[data-id='{row_id}']")
    track = row.locator(".tl-track").bounding_box()
    bar = row.locator(f".tl-bar[data-segment={segment}]").bounding_box()
    assert track and bar
    return (bar["x"] - track["x"]) / track["width"] * span_ms


def near(actual: float, expected: float) -> bool:
    return abs(actual - expected) <= 0.1 * expected


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_trace_turn_draws_parallel_tools_an_approval_and_a_subagent(
    shared_server: Served, page_factory: Any, shot: Shot, tmp_path: Path, scheme: str
) -> None:
    page = page_factory(color_scheme=scheme)
    open_playground(page, shared_server.url)
    path = write_trace(tmp_path / "turn.ndjson", parallel_turn())
    page.locator("#trace-file").set_input_files(str(path))
    page.locator(".turn-foot").wait_for()
    page.get_by_text("Timeline", exact=True).click()
    page.locator(".tl-row").first.wait_for()

    drawn = rows(page)
    order = [(r["kind"], r["id"], r["depth"]) for r in drawn]
    assert order == [
        ("step", "step-1", "0"),
        ("model", "model-1", "1"),
        ("tool", "c1", "1"),
        ("tool", "c3", "1"),
        ("subagent", "sub-c3", "2"),  # nested under its task call
        ("tool", "c2", "1"),
        ("step", "step-2", "0"),
        ("model", "model-2", "1"),
    ]
    recorded = {"c1": 200, "c3": 410, "c2": 300, "step-1": 480, "step-2": 190, "sub-c3": 400}
    by_id = {r["id"]: r for r in drawn}
    for row_id, ms in recorded.items():
        assert near(float(by_id[row_id]["durationMs"]), ms), (row_id, by_id[row_id])
    assert by_id["model-1"]["durationMs"] == "50" and by_id["model-2"]["durationMs"] == "180"

    # What is drawn measures the same: widths and offsets on a 2000 ms axis.
    span = 2000.0
    assert near(bar_ms(page, "c1", "running", span), 200)
    assert near(bar_ms(page, "c3", "running", span), 410)
    assert near(bar_ms(page, "c2", "waiting", span), 1440)
    assert near(bar_ms(page, "c2", "running", span), 300)
    assert near(bar_ms(page, "sub-c3", "subagent", span), 400)
    assert near(bar_ms(page, "model-1", "ttft", span), 20)
    assert near(bar_left_ms(page, "c2", "running", span), 1505)
    assert bar_left_ms(page, "c1", "running", span) < bar_left_ms(page, "c2", "running", span)
    meta = page.locator(".tl-row[data-id='model-1'] .tl-meta").inner_text()
    assert "first output 20 ms" in meta and "120 in · 30 out tokens" in meta
    assert "$0.0009" in meta
    assert page.locator(".tl-mark.continued").count() == len(drawn)  # one per row's track
    assert "continued after an approval at +1.50 s" in page.locator(".tl-legend").inner_text()
    page.locator(".timeline").scroll_into_view_if_needed()
    shot(page, f"timeline-{scheme}")


def test_the_timeline_draws_live_while_the_turn_waits_and_runs(
    shared_server: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory()
    open_playground(page, shared_server.url)
    send(page, "weather and wipe the notes")
    page.get_by_role("button", name="Approve").wait_for()
    page.get_by_text("Timeline", exact=True).click()
    waiting = page.locator(".tl-row[data-kind=tool]", has_text="wipe_notes")
    waiting.locator(".tl-bar[data-segment=waiting]").wait_for()
    assert "in progress" in waiting.locator(".tl-meta").inner_text()
    assert waiting.locator(".tl-bar[data-segment=running]").count() == 0

    page.get_by_role("button", name="Approve").click()
    wait_turns_done(page, 1)
    waiting.locator(".tl-bar[data-segment=running]").wait_for()
    assert "in progress" not in waiting.locator(".tl-meta").inner_text()
    with httpx.Client(timeout=30) as client:
        events = dump(client, shared_server.url, session_id(page))
    results = {e["data"]["toolName"]: e["data"] for e in events if e["type"] == "action.result"}
    by_name = {
        page.locator(f".tl-row[data-id='{r['id']}'] .tl-name").inner_text(): r
        for r in rows(page)
        if r["kind"] == "tool"
    }
    assert set(by_name) == {"get_weather", "wipe_notes"}
    for name, row in by_name.items():
        assert int(row["durationMs"]) == results[name]["durationMs"]
    steps = [e["data"] for e in events if e["type"] == "step.completed"]
    drawn_steps = [int(r["durationMs"]) for r in rows(page) if r["kind"] == "step"]
    assert drawn_steps == [s["durationMs"] for s in steps]
    assert page.locator(".tl-legend", has_text="continued after an approval").count() == 1
    shot(page, "timeline-live")


def test_an_interrupted_turn_marks_where_it_stopped(
    shared_server: Served, page_factory: Any, tmp_path: Path
) -> None:
    events = [e for e in parallel_turn() if e["index"] <= 11]  # parked on its approval
    last = events[-1]
    stop = {
        **last,
        "index": last["index"] + 1,
        "type": "turn.failed",
        "at": "2026-01-05T09:00:03.000Z",
    }
    events.append({**stop, "data": {"error": "turn interrupted"}})
    page = page_factory()
    open_playground(page, shared_server.url)
    page.locator("#trace-file").set_input_files(str(write_trace(tmp_path / "i.ndjson", events)))
    page.locator(".turn-foot").wait_for()
    page.get_by_text("Timeline", exact=True).click()
    page.locator(".tl-mark.interrupted").first.wait_for()
    assert "interrupted at +3.00 s" in page.locator(".tl-legend").inner_text()
    wipe = page.locator(".tl-row[data-id='c2']")
    assert wipe.locator(".tl-bar[data-segment=running]").count() == 0  # it never ran
    assert "never ran to the end" in wipe.locator(".tl-meta").inner_text()
    assert near(bar_ms(page, "c2", "waiting", 3000.0), 2940)
