"""The playground's finer points in a real browser against a real `agentkit serve`: a
denied call, the reasoning block and the turn's cost, a trace file dropped on the chat, and
"Copy curl" putting a command on the clipboard that works as copied."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, write_agent
from tests.playground.conftest import Shot
from tests.playground.test_playground import (
    open_playground,
    raw_events,
    send,
    session_id,
    wait_turns_done,
)
from tests.server.helpers import dump, read_stream, start_session, turn_ends

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pr-review"

# A price for the offline `test` model, so its turns carry `costUsd`.
PRICED = {
    **AGENT_FILES,
    "agent/agent.py": """
        from agentkit import define_agent

        agent = define_agent(
            model="test", max_steps=6, prices={"test": {"input": 2.0, "output": 10.0}}
        )
    """,
}


@pytest.fixture
def priced(tmp_path: Path, request: pytest.FixtureRequest) -> Served:
    project = write_agent(tmp_path / SLUG, PRICED)
    served = Served(project, tmp_path / "state", [], {**os.environ, "AGENTKIT_MODEL": "test"})
    served.start()
    request.addfinalizer(served.stop)
    return served


def test_deny_a_parked_call_with_reasoning_and_cost_shown(
    priced: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory()
    open_playground(page, priced.url)
    send(page, "please wipe the notes folder")
    deny = page.get_by_role("button", name="Deny")
    deny.wait_for()
    deny.click()
    wait_turns_done(page, 1)
    card = page.locator("details.tool", has_text="wipe_notes")
    assert card.locator(".tool-state").inner_text().startswith("error")  # it never ran
    assert card.locator(".decided").inner_text() == "Denied by local"

    with httpx.Client(timeout=30) as client:
        events = dump(client, priced.url, session_id(page))
    [resolved] = [e for e in events if e["type"] == "action.approval_resolved"]
    assert resolved["data"]["decision"] == "deny"
    [result] = [e for e in events if e["type"] == "action.result"]
    assert result["data"]["isError"] is True  # the tool never ran

    # The reasoning the model streamed is shown, folded, with the recorded text.
    reasoning = [e["data"]["text"] for e in events if e["type"] == "reasoning.completed"]
    assert reasoning, "the test model reasons before calling a tool"
    box = page.locator(".reasoning-box").first
    box.locator("summary").click()
    assert box.locator(".reasoning-text").inner_text().strip() == reasoning[0].strip()

    # The turn's cost from `turn.completed`, next to its tokens.
    done = next(e["data"] for e in events if e["type"] == "turn.completed")
    usage = done["usage"]
    expected = (usage["inputTokens"] * 2.0 + usage["outputTokens"] * 10.0) / 1e6
    assert done["costUsd"] == pytest.approx(expected)
    shown = f"${done['costUsd']:.4f}" if done["costUsd"] < 0.01 else f"${done['costUsd']:.2f}"
    foot = page.locator(".turn-foot").inner_text()
    assert shown in foot and f"{usage['inputTokens']:,} in" in foot
    shot(page, "14-denied")


def test_a_trace_file_dropped_on_the_chat_renders_without_uploading(
    priced: Served, page_factory: Any
) -> None:
    with httpx.Client(timeout=30) as client:
        body = start_session(client, priced.url, "What is the weather in Accra?")
        read_stream(client, priced.url, body["sessionId"], until=turn_ends())
        trace = client.get(body["traceUrl"]).text
    events = [json.loads(line) for line in trace.splitlines()]

    page = page_factory()
    open_playground(page, priced.url)
    sent: list[str] = []
    page.on("request", lambda request: sent.append(f"{request.method} {request.url}"))
    # A real drop: a DataTransfer holding the file, as the browser builds on drag and drop.
    transfer = page.evaluate_handle(
        """(text) => {
          const dt = new DataTransfer();
          dt.items.add(new File([text], "dropped.ndjson", { type: "application/x-ndjson" }));
          return dt;
        }""",
        trace,
    )
    page.dispatch_event("#drop-zone", "drop", {"dataTransfer": transfer})
    wait_turns_done(page, 1)
    assert page.locator("#session-label").inner_text() == f"dropped.ndjson ({len(events)} events)"
    texts = [e["data"]["text"] for e in events if e["type"] == "message.completed"]
    assert page.locator(".assistant-text").all_inner_texts() == texts
    assert page.get_by_label("Message").is_disabled()
    assert not [s for s in sent if "/v1/" in s], sent


def test_copy_curl_gives_a_command_that_works_as_copied(tmp_path: Path, page_factory: Any) -> None:
    project = tmp_path / "pr-review"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".agentkit", "__pycache__"))
    # (--dev: a loopback caller may read the channel's session, owned by the channel.)
    env = {**os.environ, "AGENTKIT_MODEL": "test"}
    served = Served(project, tmp_path / "state", ["--dev"], env)
    served.start()
    try:
        page = page_factory(permissions=["clipboard-read", "clipboard-write"])
        page.goto(f"{served.root_url}/pr-review/playground")
        page.locator("body[data-ready]").wait_for(state="attached")
        page.get_by_role("tab", name="Surface").click()
        page.get_by_role("button", name="Try POST /v1/channels/drive").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_label("JSON body").fill('{"pr": 9, "note": "it\'s small"}')
        dialog.get_by_role("button", name="Copy curl").click()
        dialog.locator("#try-result", has_text="Copied").wait_for()
        command = str(page.evaluate("navigator.clipboard.readText()"))
        assert command.startswith("curl -X POST 'http://127.0.0.1:")
        # Run exactly what was copied: the route answers with the session it created.
        out = subprocess.run(
            ["bash", "-c", command + " -s"], capture_output=True, text=True, timeout=60
        )
        answer = json.loads(out.stdout)
        assert answer.get("sessionId", "").startswith("ses_"), out.stdout
        with httpx.Client(timeout=30) as client:
            base = f"{served.root_url}/pr-review"
            events = read_stream(client, base, answer["sessionId"], until=turn_ends())
        first = next(e for e in events if e["type"] == "message.received")
        assert "Review PR #9." in json.dumps(first["data"])
    finally:
        served.stop()


def test_a_stream_cut_mid_line_resumes_with_each_delta_once(
    priced: Served, page_factory: Any
) -> None:
    # The first stream response is cut in the middle of a text delta's line, as a dropped
    # connection leaves it: the page must drop the partial line and ask again from its
    # index, so every event (and so every delta) is applied exactly once.
    page = page_factory()
    requests: list[str] = []
    cut_at: list[int] = []

    def cut_once(route: Any) -> None:
        requests.append(route.request.url)
        if cut_at:
            route.continue_()
            return
        # Long enough for the whole turn, then the recorded bytes are cut short.
        response = route.fetch(url=route.request.url + "&window=8", timeout=60_000)
        lines = response.body().split(b"\n")
        deltas = [i for i, line in enumerate(lines) if b'"message.appended"' in line]
        assert deltas, lines
        at = deltas[0]
        cut_at.append(json.loads(lines[at])["index"])
        body = b"\n".join(lines[:at]) + b"\n" + lines[at][: len(lines[at]) // 2]
        route.fulfill(status=200, headers=response.headers, body=body)

    page.route(re.compile(r".*/v1/session/[^/]+/stream\?.*"), cut_once)
    open_playground(page, priced.url)
    send(page, "What is the weather in Hanoi?")
    wait_turns_done(page, 1)
    assert cut_at and f"startIndex={cut_at[0]}" in requests[1], (cut_at, requests)

    with httpx.Client(timeout=30) as client:
        events = dump(client, priced.url, session_id(page))
    received = raw_events(page)
    assert [e["index"] for e in received] == list(range(len(events)))
    assert received == events
    texts = [e["data"]["text"] for e in events if e["type"] == "message.completed"]
    assert page.locator(".assistant-text").all_inner_texts() == texts


def test_a_turn_over_budget_asks_and_approving_continues_it(
    tmp_path: Path, page_factory: Any, shot: Shot
) -> None:
    files = {
        **AGENT_FILES,
        "agent/agent.py": """
            from agentkit import define_agent

            agent = define_agent(model="test", max_steps=6, budget={"turn_tokens": 300})
        """,
    }
    project = write_agent(tmp_path / SLUG, files)
    served = Served(project, tmp_path / "state", [], {**os.environ, "AGENTKIT_MODEL": "test"})
    served.start()
    try:
        page = page_factory()
        open_playground(page, served.url)
        send(page, "What is the weather in Lagos?")
        approve = page.get_by_role("button", name="Approve")
        approve.wait_for()
        card = page.locator("details.tool", has_text="budget")
        ask = card.locator(".ask").inner_text()
        assert ask.startswith("budget exceeded: this turn has used") and "Deny ends it" in ask
        shot(page, "15-budget")
        approve.click()
        wait_turns_done(page, 1)
        assert "Turn completed" in page.locator(".turn-foot").inner_text()
        assert "get_weather returned" in page.locator(".assistant-text").last.inner_text()
    finally:
        served.stop()
