"""Every event type the docs list has a renderer: none of them, and no type from a newer
server either, shows up as an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.http_server import Served
from tests.playground.conftest import Shot
from tests.playground.test_playground import open_playground, send, wait_turns_done
from tests.playground.traces import DOCUMENTED, every_type, write_trace

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")

FAILURES = {"turn.failed", "session.failed"}


def error_styled(page: Any) -> list[str]:
    """Text of every visible element drawn in the page's error colour."""
    texts: list[str] = page.locator("#transcript *").evaluate_all(
        """(nodes) => {
          const probe = document.createElement("span");
          probe.className = "error";
          document.body.append(probe);
          const red = getComputedStyle(probe).color;
          probe.remove();
          return nodes.filter((n) => n.offsetParent !== null && n.childElementCount === 0
            && n.textContent.trim() && getComputedStyle(n).color === red)
            .map((n) => n.textContent.trim());
        }"""
    )
    return texts


def test_a_session_with_every_event_type_shows_no_error(
    shared_server: Served, page_factory: Any, shot: Shot, tmp_path: Path
) -> None:
    events = every_type()
    assert {e["type"] for e in events} >= DOCUMENTED - FAILURES
    page = page_factory()
    open_playground(page, shared_server.url)
    page.locator("#trace-file").set_input_files(str(write_trace(tmp_path / "t.ndjson", events)))
    page.locator(".note.session-end").wait_for()
    assert error_styled(page) == []
    # Each type has its own rendering, not the fallback: only the unknown one falls back.
    assert page.locator(".note.unknown").all_inner_texts() == ["future.thing"]
    card = page.locator("details.tool", has_text="wipe_notes")
    assert card.locator(".tool-state").inner_text() == "done · 55 ms"
    assert "variant warm paused: cost" in page.locator("#transcript").inner_text()
    assert (
        page.locator(".note.forked")
        .inner_text()
        .endswith("Forked from ses_original0000001 at event 1")
    )
    assert page.locator(".note.compacted").count() == 1
    assert (
        page.locator(".note.paused")
        .inner_text()
        .endswith("Paused by local: no new turns until resumed")
    )
    assert page.locator(".note.resumed").inner_text().endswith("Resumed by local")
    assert "Killed by local" in page.locator(".note.killed").inner_text()
    assert "older turns summarized" in page.locator(".note.compacted").inner_text()
    shot(page, "event-types")


def test_an_approved_call_shows_running_not_a_stray_line(
    shared_server: Served, page_factory: Any
) -> None:
    page = page_factory()
    open_playground(page, shared_server.url)
    send(page, "please wipe the notes folder")
    page.get_by_role("button", name="Approve").click()
    wait_turns_done(page, 1)
    assert page.locator(".note.unknown").count() == 0
    assert "action.started" not in page.locator("#transcript").inner_text()
    assert error_styled(page) == []
    state = page.locator("details.tool", has_text="wipe_notes").locator(".tool-state")
    assert state.inner_text().startswith("done · ")


def test_a_queued_message_waits_apart_until_its_turn(
    shared_server: Served, page_factory: Any, tmp_path: Path
) -> None:
    events = [e for e in every_type() if e["type"] != "session.completed"]
    page = page_factory()
    open_playground(page, shared_server.url)
    page.locator("#trace-file").set_input_files(str(write_trace(tmp_path / "q.ndjson", events)))
    page.locator(".turn-foot").wait_for()
    queued = page.locator(".user.queued")
    assert "and tomorrow?" in queued.inner_text()
