"""The Surface tab's Try form for every server tool, generated from its JSON Schema: run
directly or inside the open session, copy the call as curl, and approval-gated tools say
they park (and do)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import Served
from tests.playground.conftest import Shot
from tests.playground.test_playground import open_playground, send, session_id, wait_turns_done
from tests.server.helpers import dump

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")


def tool_card(page: Any, name: str) -> Any:
    page.get_by_role("tab", name="Surface").click()
    card = page.locator(f"details.card[data-tool={name}]")
    card.locator("> summary").click()
    return card


def test_every_server_tool_has_a_form_from_its_schema(
    shared_server: Served, page_factory: Any
) -> None:
    info = httpx.get(f"{shared_server.url}/v1/info").json()
    page = page_factory()
    open_playground(page, shared_server.url)
    page.get_by_role("tab", name="Surface").click()
    page.locator("details.card[data-tool]").first.wait_for()
    for tool in info["tools"]:
        form = page.locator(f"details.card[data-tool={tool['name']}] form.tool-form")
        if tool["execution"] != "server":
            assert form.count() == 0
            continue
        names = form.locator("input, select, textarea").evaluate_all(
            "(nodes) => nodes.map((n) => n.name)"
        )
        assert names == list(tool["inputSchema"].get("properties", {})), tool["name"]


def test_run_a_tool_directly_from_its_form(
    shared_server: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory()
    open_playground(page, shared_server.url)
    card = tool_card(page, "get_weather")
    card.get_by_label("city").fill("Lima")
    card.get_by_role("button", name="Run", exact=True).click()
    result = card.locator(".tool-result")
    result.locator("pre").wait_for()
    reply = json.loads(result.locator("pre").inner_text())
    assert reply["result"] == {"city": "Lima", "tempC": 21} and reply["isError"] is False
    assert result.locator("p.ok").inner_text().startswith("Done in ")
    shot(page, "tool-form")

    # Copy curl: the clipboard holds a command that makes the same call.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    card.get_by_role("button", name="Copy curl").click()
    result.get_by_text("Copied the curl command.").wait_for()
    text = page.evaluate("navigator.clipboard.readText()")
    assert f"'{shared_server.url}/v1/tools/get_weather'" in text
    body = json.loads(text.split("-d '", 1)[1].rstrip("'"))
    assert body == {"input": {"city": "Lima"}}
    again = httpx.post(f"{shared_server.url}/v1/tools/get_weather", json=body).json()
    assert again["result"] == reply["result"]


def test_a_required_field_left_empty_is_said_before_sending(
    shared_server: Served, page_factory: Any
) -> None:
    page = page_factory()
    open_playground(page, shared_server.url)
    card = tool_card(page, "get_weather")
    card.get_by_label("city").fill("")
    card.get_by_role("button", name="Run", exact=True).click()
    error = card.locator(".tool-result .error")
    error.wait_for()
    assert "city" in error.inner_text()


def test_an_approval_gated_tool_says_it_parks_and_parks_in_the_open_session(
    shared_server: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory()
    open_playground(page, shared_server.url)
    card = tool_card(page, "wipe_notes")
    assert "Needs approval" in card.locator(".parks").inner_text()
    assert card.get_by_role("button", name="Run in open session").is_disabled()
    card.get_by_role("button", name="Run", exact=True).click()
    card.locator(".tool-result .error", has_text="approval_required").wait_for()

    page.get_by_role("tab", name="Chat").click()
    send(page, "What is the weather in Rome?")
    wait_turns_done(page, 1)
    sid = session_id(page)
    card = tool_card(page, "wipe_notes")
    card.get_by_role("button", name="Run in open session").click()
    parked = card.locator(".tool-result .parks")
    parked.wait_for()
    assert sid in parked.inner_text()
    shot(page, "tool-form-parked")
    with httpx.Client(timeout=30) as client:
        events = dump(client, shared_server.url, sid)
    [asked] = [e for e in events if e["type"] == "action.approval_requested"]
    assert asked["data"]["toolName"] == "wipe_notes"
    card.get_by_role("button", name="Open the session to decide").click()
    page.get_by_role("button", name="Approve").wait_for()
