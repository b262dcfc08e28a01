""" "Fork from here" in the playground, in Chromium against a real `agentkit serve`: the
page opens the fork, which takes a follow-up; the original is left as it was."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import ServeFactory
from tests.playground.conftest import Shot
from tests.playground.test_playground import (
    open_playground,
    raw_events,
    send,
    session_id,
    wait_turns_done,
)
from tests.server.helpers import dump, read_stream, turn_ends

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")


def test_fork_from_here_opens_a_fork_that_goes_on(
    serve: ServeFactory, page_factory: Any, shot: Shot
) -> None:
    served = serve()
    page = page_factory()
    refused: list[str] = []
    page.on(
        "console",
        lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None,
    )
    open_playground(page, served.url)
    send(page, "What is the weather in Paris?")
    wait_turns_done(page, 1)
    original = session_id(page)
    seen = raw_events(page)  # opens the raw pane: one line, and one fork button, per event
    assert page.locator(".raw-fork").count() == len(seen)
    cut = next(e["index"] for e in seen if e["type"] == "action.result")
    button = page.get_by_role("button", name=f"Fork from here (event {cut})")
    shot(page, "fork-01-raw")
    button.click()
    page.locator("#session-label").filter(has_not_text=original).wait_for()
    fork = session_id(page)
    assert fork != original
    assert page.locator("#composer-hint").inner_text() == (
        f"Forked from {original} at event {cut}."
    )
    with httpx.Client(timeout=30) as client:
        before = dump(client, served.url, original)
        forked = dump(client, served.url, fork)
        assert forked[0]["type"] == "session.forked"
        assert forked[0]["data"] == {
            "fromSessionId": original,
            "atIndex": cut,
            "manifestDigest": forked[0]["data"]["manifestDigest"],
        }
        assert [e["type"] for e in forked[1 : cut + 2]] == [e["type"] for e in before[: cut + 1]]
        # The cut fell inside the turn: the fork ended it, and its next message is a turn.
        send(page, "And in Porto?")
        read_stream(client, served.url, fork, start=len(forked), until=turn_ends())
        after = dump(client, served.url, fork)
        assert after[-2]["type"] == "turn.completed"
        assert "Porto" in after[-2]["data"]["result"]
        assert dump(client, served.url, original) == before
    shot(page, "fork-02-forked")
    assert not refused, refused
