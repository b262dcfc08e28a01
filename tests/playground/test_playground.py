"""The playground in a real browser against a real `agentkit serve`: chat with a streamed
reply, approvals, deep links and search, the raw pane, bearer tokens, trace files, a
server killed and restarted mid-turn, and model text that tries to become markup."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import (
    AGENT_FILES,
    SLUG,
    Served,
    ServeFactory,
    serve_in,
    write_agent,
)
from tests.playground.conftest import Shot
from tests.server.helpers import dump, read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One plain server for the tests that only touch sessions of their own (each page
    starts in a fresh browser context, so with a session of its own). Tests that kill the
    server, or need other flags or another agent, start their own."""
    served = serve_in(tmp_path_factory.mktemp("playground"))
    yield served
    served.stop()
    assert "Traceback" not in served.output(), served.output()


def open_playground(page: Any, url: str, query: str = "") -> None:
    page.goto(f"{url}/playground{query}")
    page.locator("#agent-name", has_text="helpdesk").wait_for()
    page.locator("body[data-ready]").wait_for(state="attached")


def send(page: Any, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def wait_turns_done(page: Any, count: int) -> None:
    # (Locators, not wait_for_function: the page's CSP forbids evaluating strings.)
    page.locator(".turn-foot").nth(count - 1).wait_for(timeout=30_000)


def session_id(page: Any) -> str:
    sid = page.locator("#session-label").inner_text()
    assert sid.startswith("ses_"), sid
    return str(sid)


def raw_events(page: Any) -> list[dict[str, Any]]:
    """The events the page received, from the raw NDJSON pane."""
    if not page.is_checked("#raw-toggle"):
        page.check("#raw-toggle")
    text = page.locator("#raw-lines").inner_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def completed_texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["text"] for e in events if e["type"] == "message.completed"]


@pytest.mark.smoke
def test_chat_streams_the_reply_with_tools_and_usage(
    shared: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory()
    open_playground(page, shared.url)
    shot(page, "01-empty")
    send(page, "What is the weather in Paris?")
    wait_turns_done(page, 1)
    sid = session_id(page)

    with httpx.Client(timeout=30) as client:
        events = dump(client, shared.url, sid)
    [reply] = completed_texts(events)
    assert page.locator(".assistant-text").all_inner_texts() == [reply]
    assert '"tempC": 21' in reply
    # The reply arrived as deltas then a final text, and the page applied every event.
    assert [e["index"] for e in raw_events(page)] == [e["index"] for e in events]
    assert any(e["type"] == "message.appended" for e in events)

    tool = page.locator("details.tool").first
    assert tool.locator(".tool-name").inner_text() == "get_weather"
    assert tool.locator(".tool-state").inner_text().startswith("done")
    tool.locator("summary").click()  # finished calls fold up; open it again
    assert '"Paris"' in tool.inner_text() and '"tempC": 21' in tool.inner_text()

    usage = next(e["data"]["usage"] for e in events if e["type"] == "turn.completed")
    foot = page.locator(".turn-foot").inner_text()
    assert f"{usage['inputTokens']:,} in" in foot and f"{usage['outputTokens']:,} out" in foot
    assert page.locator("#conn").inner_text() == "live"
    page.uncheck("#raw-toggle")
    shot(page, "02-chat")


def test_approve_a_parked_call_and_see_its_result(
    shared: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory()
    open_playground(page, shared.url)
    send(page, "What is the weather in Paris?")
    wait_turns_done(page, 1)
    send(page, "please wipe the notes folder")
    approve = page.get_by_role("button", name="Approve")
    approve.wait_for()
    card = page.locator("details.tool", has_text="wipe_notes")
    assert '"folder": "notes"' in card.inner_text()
    assert card.locator(".tool-state").inner_text() == "needs approval"
    shot(page, "03-approval")

    approve.click()
    wait_turns_done(page, 2)
    card.locator("summary").click()  # a finished call folds up; open it
    assert card.locator(".decided").inner_text() == "Approved by local"
    assert '"wiped": "notes"' in card.inner_text()
    assert "wipe_notes returned" in page.locator(".assistant-text").last.inner_text()
    with httpx.Client(timeout=30) as client:
        events = dump(client, shared.url, session_id(page))
    [resolved] = [e for e in events if e["type"] == "action.approval_resolved"]
    assert resolved["data"]["decision"] == "approve"


def test_open_a_finished_session_by_deep_link_and_by_search(
    shared: Served, page_factory: Any, shot: Shot
) -> None:
    with httpx.Client(timeout=30) as client:
        first = start_session(client, shared.url, "What is the weather in Oslo?")
        other = start_session(client, shared.url, "Say hello")
        for body in (first, other):
            read_stream(client, shared.url, body["sessionId"], until=turn_ends())
        expected = completed_texts(dump(client, shared.url, first["sessionId"]))

    page = page_factory()
    page.goto(first["playgroundUrl"])  # the deep link the API hands out
    wait_turns_done(page, 1)
    assert page.locator("#session-label").inner_text() == first["sessionId"]
    assert page.locator(".assistant-text").all_inner_texts() == expected
    replayed = page.locator("#transcript").inner_text()

    page.get_by_role("tab", name="Sessions").click()
    rows = page.locator(".session-row")
    rows.nth(1).wait_for()
    search = page.get_by_label("Search sessions")
    search.fill(other["sessionId"][4:14])
    assert page.locator(".session-row:visible").all_inner_texts()[0].startswith(other["sessionId"])
    assert page.locator(".session-row:visible").count() == 1
    shot(page, "04-sessions")
    search.fill(first["sessionId"])
    search.press("Enter")
    wait_turns_done(page, 1)
    assert page.get_by_role("tab", name="Chat").get_attribute("aria-selected") == "true"
    # The same session opened twice renders the same.
    assert page.locator("#transcript").inner_text() == replayed


def test_live_and_replayed_turns_render_the_same(shared: Served, page_factory: Any) -> None:
    page = page_factory()
    open_playground(page, shared.url)
    send(page, "What is the weather in Rome?")
    wait_turns_done(page, 1)
    send(page, "please wipe the notes folder")
    page.get_by_role("button", name="Approve").click()
    wait_turns_done(page, 2)
    live = page.locator("#transcript").inner_html()
    sid = session_id(page)

    replay = page_factory()
    replay.goto(f"{shared.url}/playground?sessionId={sid}")
    wait_turns_done(replay, 2)
    # Durations come from event times, so even they agree.
    assert replay.locator("#transcript").inner_html() == live


def test_raw_pane_shows_the_wire_events(shared: Served, page_factory: Any, shot: Shot) -> None:
    page = page_factory()
    open_playground(page, shared.url)
    send(page, "What is the weather in Lima?")
    wait_turns_done(page, 1)
    page.get_by_role("checkbox", name="Raw NDJSON").check()
    shown = page.locator("#raw-lines").inner_text().splitlines()
    with httpx.Client(timeout=30) as client:
        r = client.get(f"{shared.url}/v1/session/{session_id(page)}/events")
    assert shown == r.text.splitlines()  # byte for byte what the server sent
    shot(page, "05-raw")


def test_token_field_on_a_bearer_protected_server(
    serve: ServeFactory, page_factory: Any, shot: Shot
) -> None:
    served = serve("--bearer-token", "s3cret-token")
    page = page_factory()
    open_playground(page, served.url)
    send(page, "hello there")
    hint = page.locator("#composer-hint")
    hint.filter(has_text="401").or_(hint.filter(has_text="token")).wait_for()
    assert "Token" in hint.inner_text()
    assert page.locator(".turn").count() == 0

    page.get_by_label("Token").fill("s3cret-token")
    page.get_by_label("Token").press("Enter")
    send(page, "hello there")
    wait_turns_done(page, 1)
    assert page.locator(".user-text").inner_text() == "hello there"
    assert page.locator(".assistant-text").inner_text().startswith("Here is what I found")
    stored = page.evaluate("sessionStorage.getItem('agentkit.token')")
    assert stored == "s3cret-token"
    # Kept for the tab only: a reload still has it, and the session still streams.
    page.reload()
    page.get_by_label("Token").wait_for()
    assert page.get_by_label("Token").input_value() == "s3cret-token"
    wait_turns_done(page, 1)
    shot(page, "06-token")


def test_open_a_trace_file_without_sending_anything(
    shared: Served, page_factory: Any, shot: Shot, tmp_path: Path
) -> None:
    with httpx.Client(timeout=30) as client:
        body = start_session(client, shared.url, "What is the weather in Cairo?")
        read_stream(client, shared.url, body["sessionId"], until=turn_ends())
        trace = client.get(body["traceUrl"]).text
    path = tmp_path / "events.ndjson"
    path.write_text(trace, encoding="utf-8")

    page = page_factory()
    open_playground(page, shared.url)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(f"{request.method} {request.url}"))
    page.locator("#trace-file").set_input_files(str(path))
    wait_turns_done(page, 1)
    events = [json.loads(line) for line in trace.splitlines()]
    assert page.locator(".assistant-text").all_inner_texts() == completed_texts(events)
    assert page.locator("#session-label").inner_text() == f"events.ndjson ({len(events)} events)"
    assert page.get_by_label("Message").is_disabled()
    assert not [s for s in sent if "/v1/" in s], sent  # read in the browser, nothing uploaded
    shot(page, "07-trace")


def test_kill_and_restart_mid_turn_completes_with_no_duplicated_text(
    serve: ServeFactory, page_factory: Any, shot: Shot
) -> None:
    served = serve(env={"SLOW_JOB_SECONDS": "120"})
    page = page_factory()
    open_playground(page, served.url)
    conn = page.locator("#conn")

    # A turn killed with its process ends as failed once the server is back.
    send(page, "run the slow job")
    page.locator(".tool-state", has_text="running").wait_for()
    served.kill9()
    conn.filter(has_text="reconnecting").wait_for()
    shot(page, "08-reconnecting")
    served.start()  # same port: the page reconnects on its own
    page.locator(".turn-foot.error").wait_for()
    assert conn.inner_text() == "live"

    # A turn parked across a restart resumes when approved, and the chat goes on.
    send(page, "please wipe the notes folder")
    approve = page.get_by_role("button", name="Approve")
    approve.wait_for()
    served.kill9()
    conn.filter(has_text="reconnecting").wait_for()
    served.start()
    conn.filter(has_text="live").wait_for()
    approve.click()
    wait_turns_done(page, 2)
    send(page, "What is the weather in Nairobi?")
    wait_turns_done(page, 3)

    with httpx.Client(timeout=30) as client:
        events = dump(client, served.url, session_id(page))
    received = raw_events(page)
    assert [e["index"] for e in received] == list(range(len(events)))  # none twice, none lost
    assert received == events
    texts = page.locator(".assistant-text").all_inner_texts()
    assert texts == completed_texts(events)
    assert len(texts) == 2 and all(texts.count(t) == 1 for t in texts)
    page.uncheck("#raw-toggle")
    shot(page, "09-after-restart")


def test_model_text_never_becomes_markup(
    page_factory: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # An agent with no tools: the test model then quotes the message back as its reply.
    files = {k: v for k, v in AGENT_FILES.items() if "/tools/" not in k}
    project = write_agent(tmp_path / SLUG, files)
    env = {**os.environ, "AGENTKIT_MODEL": "test"}
    served = Served(project, tmp_path / "state", [], env).start()
    request.addfinalizer(served.stop)
    page = page_factory()
    open_playground(page, served.url)
    attack = (
        'hi <img src=x onerror="window.pwned=1"> <script>window.pwned=2</script> '
        "[click](javascript:window.pwned=3) **bold** `code`"
    )
    send(page, attack)
    wait_turns_done(page, 1)
    reply = page.locator(".assistant-text")
    # The test model quotes the message back: the markup shows as text, inert.
    assert "<img src=x" in reply.inner_text()
    assert page.locator("#transcript img, #transcript script").count() == 0
    assert page.locator("#transcript a[href^='javascript']").count() == 0
    assert reply.locator("strong").inner_text() == "bold"
    assert reply.locator("code").inner_text() == "code"
    assert page.evaluate("window.pwned") is None


def test_commands_tabs_and_a_phone_screen(
    serve: ServeFactory, page_factory: Any, shot: Shot
) -> None:
    served = serve("--dev")
    page = page_factory(width=390, height=844, is_mobile=True, has_touch=True)
    open_playground(page, served.url)
    composer = page.get_by_label("Message")
    composer.fill("/he")
    page.get_by_role("option").first.wait_for()
    composer.press("Tab")
    assert composer.input_value() == "/help "
    composer.press("Enter")
    page.locator(".note.help").wait_for()
    assert "/open" in page.locator(".note.help").inner_text()
    no_overflow = "document.documentElement.scrollWidth <= window.innerWidth"
    assert page.evaluate(no_overflow)

    send(page, "What is the weather in Lisbon?")
    wait_turns_done(page, 1)
    assert page.evaluate(no_overflow)
    shot(page, "10-phone")

    # Keyboard: arrow keys move between tabs.
    page.get_by_role("tab", name="Chat").focus()
    page.keyboard.press("ArrowRight")
    assert page.get_by_role("tab", name="Sessions").get_attribute("aria-selected") == "true"

    page.get_by_role("tab", name="Surface").click()
    page.get_by_text("wipe_notes").first.wait_for()
    assert "needs approval" in page.locator("#surface").inner_text()

    with httpx.Client(timeout=10) as client:
        abs_route = client.get(f"{served.url}/v1/abs").status_code
    page.get_by_role("tab", name="A/Bs").click()
    page.locator("#abs > *").first.wait_for()
    absent = "not available" in page.locator("#abs").inner_text()
    assert absent == (abs_route == 404)

    page.get_by_role("tab", name="Evals").click()
    page.locator("#evals > *").first.wait_for()
    assert "not available" not in page.locator("#evals").inner_text()

    page.get_by_role("tab", name="Logs").click()
    page.locator("#logs", has_text=re.compile("INFO")).wait_for()

    page.get_by_role("tab", name="Dev").click()
    page.get_by_role("button", name="Dispatch now").click()
    page.locator("#dev button.link").first.wait_for()
    page.locator("#dev button.link").first.click()
    page.locator(".session-start", has_text="schedule").wait_for()


def test_short_stream_windows_resume_without_gaps_or_repeats(
    serve: ServeFactory, page_factory: Any
) -> None:
    # Every stream response ends after a second, as a Lambda response does at its window:
    # the page must keep reconnecting from the next index through a multi-second turn.
    served = serve(env={"SLOW_JOB_SECONDS": "4", "SLOW_JOB_GATES": ""})
    page = page_factory()
    starts: list[int] = []

    def short_window(route: Any) -> None:
        starts.append(int(re.search(r"startIndex=(\d+)", route.request.url).group(1)))  # type: ignore[union-attr]
        route.continue_(url=route.request.url + "&window=1")

    page.route(re.compile(r".*/v1/session/[^/]+/stream\?.*"), short_window)
    open_playground(page, served.url)
    send(page, "run the slow job")
    wait_turns_done(page, 1)
    send(page, "What is the weather in Quito?")
    wait_turns_done(page, 2)

    with httpx.Client(timeout=30) as client:
        events = dump(client, served.url, session_id(page))
    assert raw_events(page) == events
    assert len(starts) >= 3 and starts == sorted(starts), starts
    assert page.locator(".assistant-text").all_inner_texts() == completed_texts(events)


def test_a_subagent_call_nests_inside_the_task_call(
    page_factory: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # No tools but a subagent: the test model delegates with the built-in `task` tool (it
    # fills the `subagent` field with "example", hence the subagent's name).
    files = {k: v for k, v in AGENT_FILES.items() if "/tools/" not in k}
    files["agent/subagents/example/instructions.md"] = "You look things up.\n"
    files["agent/subagents/example/agent.py"] = (
        "from agentkit import define_agent\n\n"
        'agent = define_agent(description="Looks things up and reports back.")\n'
    )
    project = write_agent(tmp_path / SLUG, files)
    served = Served(project, tmp_path / "state", [], {**os.environ, "AGENTKIT_MODEL": "test"})
    served.start()
    request.addfinalizer(served.stop)

    page = page_factory()
    open_playground(page, served.url)
    send(page, "Find out about tides")
    wait_turns_done(page, 1)
    task = page.locator("details.tool", has_text="task")
    task.locator("summary").click()
    nested = task.locator(".subagent")
    assert nested.locator(".label").inner_text().lower() == "subagent example"
    with httpx.Client(timeout=30) as client:
        events = dump(client, served.url, session_id(page))
    [done] = [e for e in events if e["type"] == "subagent.completed"]
    assert done["data"]["result"] and done["data"]["result"][:20] in nested.inner_text()
    assert "tokens" in nested.locator(".usage").inner_text()
