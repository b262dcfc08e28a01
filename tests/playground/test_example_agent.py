"""The playground over the pr-review example (channels, an A/B experiment, evals), served
by a real `agentkit serve`: slash commands from channel routes, the Try form, the A/Bs tab
and the Evals tab, each working when its route exists and "not available" only without."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import Served
from tests.playground.conftest import Shot

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pr-review"


@pytest.fixture
def pr_review(tmp_path: Path) -> Iterator[Served]:
    project = tmp_path / "pr-review"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns(".agentkit", "__pycache__"))
    env = {**os.environ, "AGENTKIT_MODEL": "test"}
    served = Served(project, tmp_path / "state", ["--dev"], env)
    # The fixture's `url` assumes the test agent's slug; this one is served as pr-review.
    served.start()
    yield served
    served.stop()


def url_of(served: Served) -> str:
    return f"{served.root_url}/pr-review"


def open_page(page: Any, served: Served) -> None:
    page.goto(f"{url_of(served)}/playground")
    page.locator("#agent-name", has_text="pr-review").wait_for()
    page.locator("body[data-ready]").wait_for(state="attached")


def channel_route_exists(served: Served) -> bool:
    probe = httpx.post(f"{url_of(served)}/v1/channels/drive", json={"pr": 0})
    return not (probe.status_code == 404 and probe.json().get("error") == "not_found")


def test_slash_command_and_try_form_call_the_channel_route(
    pr_review: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory()
    open_page(page, pr_review)
    composer = page.get_by_label("Message")
    composer.fill("/dr")
    option = page.get_by_role("option").first
    assert option.inner_text().startswith("/drive <pr>")
    composer.press("Tab")
    composer.press_sequentially("42")
    composer.press("Enter")
    if channel_route_exists(pr_review):
        page.locator(".user-text", has_text="Review PR #42.").wait_for()
        assert page.locator("#session-label").inner_text().startswith("ses_")
    else:
        page.locator("#composer-hint", has_text="not_found").wait_for()

    page.get_by_role("tab", name="Surface").click()
    page.get_by_role("button", name="Try POST /v1/channels/drive").click()
    dialog = page.get_by_role("dialog")
    body = dialog.get_by_label("JSON body")
    assert '"pr": 0' in body.input_value()  # prefilled from the route's schema
    body.fill('{"pr": 7, "note": "small one"}')
    shot(page, "11-try")
    dialog.get_by_role("button", name="Send").click()
    if channel_route_exists(pr_review):
        page.locator(".user-text", has_text="Review PR #7.").wait_for()
    else:
        dialog.locator("#try-result", has_text="not_found").wait_for()
        dialog.get_by_role("button", name="Close").click()
    # The body is remembered for this endpoint.
    page.get_by_role("tab", name="Surface").click()
    page.get_by_role("button", name="Try POST /v1/channels/drive").click()
    assert page.get_by_label("JSON body").input_value() == '{"pr": 7, "note": "small one"}'


def test_ab_and_evals_tabs(pr_review: Served, page_factory: Any, shot: Shot) -> None:
    page = page_factory()
    open_page(page, pr_review)
    page.get_by_label("Message").fill("Please review PR 12")
    page.get_by_label("Message").press("Enter")
    page.locator(".turn-foot").first.wait_for()
    sid = page.locator("#session-label").inner_text()

    page.get_by_role("tab", name="A/Bs").click()
    abs_panel = page.locator("#abs")
    if httpx.get(f"{url_of(pr_review)}/v1/abs").status_code == 404:
        abs_panel.get_by_text("not available").wait_for()
    else:
        abs_panel.get_by_role("heading", name="review-style").wait_for()
        abs_panel.get_by_role("button", name=sid).click()  # an enrolled session opens
        page.locator("#session-label", has_text=sid).wait_for()
        page.get_by_role("tab", name="A/Bs").click()
        abs_panel.get_by_role("heading", name="review-style").wait_for()
        shot(page, "12-abs")

    page.get_by_role("tab", name="Evals").click()
    evals = page.locator("#evals")
    evals.get_by_role("heading", name="Runs").wait_for()
    assert "not available" not in evals.inner_text()
    boxes = evals.get_by_role("checkbox")
    assert boxes.count() >= 1
    boxes.first.check()
    evals.get_by_role("button", name="Run selected (all when none)").click()
    evals.locator(".card summary", has_text="completed").first.wait_for(timeout=60_000)
    shot(page, "13-evals")


def test_dev_tab_fires_a_reminder(pr_review: Served, page_factory: Any) -> None:
    page = page_factory()
    open_page(page, pr_review)
    page.get_by_label("Message").fill("Please list open PRs")
    page.get_by_label("Message").press("Enter")
    page.locator(".turn-foot").first.wait_for()
    sid = page.locator("#session-label").inner_text()
    # The agent's remind_me tool, run inside the session (the test model cannot pick a
    # valid delay), leaves a reminder for the Dev tab.
    made = httpx.post(
        f"{url_of(pr_review)}/v1/tools/remind_me",
        json={"sessionId": sid, "input": {"delay": "2h", "prompt": "List open PRs again"}},
        timeout=30,
    )
    assert made.status_code == 200 and made.json()["isError"] is False, made.text

    page.get_by_role("tab", name="Dev").click()
    fire = page.get_by_role("button", name="Fire now")
    fire.first.wait_for()
    assert sid in page.locator("#dev").inner_text()
    fire.first.click()
    # The reminder's turn runs in the same conversation, which opens.
    page.locator("#session-label", has_text=sid).wait_for()
    page.locator(".turn-foot").nth(1).wait_for()
    woken = page.locator(".user").nth(1)
    assert woken.locator(".who").inner_text().startswith("from ")
    assert "List open PRs again" in woken.inner_text()


def test_the_sessions_tab_lists_chat_channel_and_schedule_sessions(
    pr_review: Served, page_factory: Any
) -> None:
    base = url_of(pr_review)
    with httpx.Client(timeout=30) as client:
        chat = client.post(f"{base}/v1/session", json={"message": "Please list open PRs"})
        channel = client.post(f"{base}/v1/channels/drive", json={"pr": 5})
        schedule = client.post(f"{base}/v1/dev/schedules/daily-digest")
        for r in (chat, channel, schedule):
            assert r.status_code == 200, r.text
        listed = client.get(f"{base}/v1/sessions", params={"limit": 100}).json()["sessions"]
    kinds = {s["sessionId"]: s["channelId"] for s in listed}
    assert len(set(kinds.values())) == 3, kinds  # three kinds of session, as the API says

    page = page_factory()
    open_page(page, pr_review)
    page.get_by_role("tab", name="Sessions").click()
    rows = page.locator(".session-row")
    rows.nth(len(kinds) - 1).wait_for()
    shown = {row.get_attribute("data-session-id"): row.inner_text() for row in rows.all()}
    assert set(shown) == set(kinds)
    for sid, channel_id in kinds.items():
        assert channel_id in shown[sid], (sid, channel_id, shown[sid])
