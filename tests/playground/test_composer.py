"""The composer and small screens: `/help` typed out runs on Enter, nothing is clipped or
overflows at 390 px, and tool cards and turn footers give the durations the events record."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import Served
from tests.playground.conftest import Shot
from tests.playground.test_playground import open_playground, send, session_id, wait_turns_done
from tests.server.helpers import dump

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")

# Width of an input's placeholder in its own font, against the room its box gives it.
PLACEHOLDER_FITS = """(node) => {
  const style = getComputedStyle(node);
  const ctx = document.createElement("canvas").getContext("2d");
  ctx.font = `${style.fontSize} ${style.fontFamily}`;
  const room = node.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return ctx.measureText(node.placeholder).width <= room;
}"""


def test_help_typed_out_runs_on_enter(shared_server: Served, page_factory: Any) -> None:
    page = page_factory()
    open_playground(page, shared_server.url)
    composer = page.get_by_label("Message")
    composer.press_sequentially("/help")
    page.get_by_role("option").first.wait_for()
    composer.press("Enter")
    page.locator(".note.help").wait_for()
    assert "/open" in page.locator(".note.help").inner_text()
    assert composer.input_value() == ""


def test_a_phone_screen_clips_no_placeholder_and_scrolls_the_tabs(
    shared_server: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory(width=390, height=844, is_mobile=True, has_touch=True)
    open_playground(page, shared_server.url)
    assert page.locator("#message").evaluate(PLACEHOLDER_FITS)
    assert page.locator("#token").evaluate(PLACEHOLDER_FITS)
    tabs = page.locator(".tabs")
    assert tabs.evaluate("(n) => getComputedStyle(n).overflowX") == "auto"
    assert tabs.evaluate("(n) => n.scrollWidth > n.clientWidth")  # more tabs than room
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    last = page.get_by_role("tab", name="A/Bs")
    last.click()
    box = last.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    shot(page, "phone-tabs-scrolled")


def _ms(start: str, end: str) -> float:
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds() * 1000


def test_tool_cards_and_turns_show_recorded_durations(
    shared_server: Served, page_factory: Any
) -> None:
    page = page_factory()
    open_playground(page, shared_server.url)
    send(page, "What is the weather in Oslo?")
    wait_turns_done(page, 1)
    with httpx.Client(timeout=30) as client:
        events = dump(client, shared_server.url, session_id(page))
    [result] = [e for e in events if e["type"] == "action.result"]
    state = page.locator("details.tool .tool-state").inner_text()
    took = result["data"]["durationMs"]
    # A recorded 0 is printed as it is (the page's one formatter: 0 -> "0 ms").
    assert state == f"done · {'<1' if 0 < took < 1 else took} ms"
    started = next(e["at"] for e in events if e["type"] == "turn.started")
    ended = next(e["at"] for e in events if e["type"] == "turn.completed")
    foot = page.locator(".turn-foot").inner_text()
    match = re.search(r"Turn completed · (<1|\d+) ms|Turn completed · ([\d.]+) s", foot)
    assert match, foot
    shown = (
        float(match.group(1).replace("<1", "0")) if match.group(1) else float(match.group(2)) * 1000
    )
    assert abs(shown - _ms(started, ended)) <= 10
    assert "0.0 s" not in foot
