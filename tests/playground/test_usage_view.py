"""The Usage tab on a seeded project: a day of spend by two callers, a turn stopped at its
budget and a caller who reached the daily limit, spread over the hours of a day. Checked
over HTTP (who sees what, the filters) and in Chromium (the SVG charts, their text
alternatives, the marks where a limit bit, the table below, at 390 px)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, _env, write_agent
from tests.playground.test_accessibility import AUDIT
from tests.server.helpers import read_stream, turn_ends

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")

ALICE, BOB, ADMIN = "alice-secret-token-0001", "bob-secret-token-000002", "admin-secret-token-00003"
FILES = {
    **AGENT_FILES,
    "agent/agent.py": """
        from agentkit import define_agent

        agent = define_agent(
            model="test",
            max_steps=6,
            prices={"test": {"input": 3.0, "output": 15.0}},
            budget={"turn_tokens": 6000, "principal_daily_tokens": 12000},
        )
    """,
}


def moment(at: str) -> datetime:
    return datetime.fromisoformat(at.replace("Z", "+00:00"))


def stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def say(c: httpx.Client, url: str, message: str) -> tuple[int, str | None]:
    r = c.post(f"{url}/v1/session", json={"message": message})
    if r.status_code != 200:
        return r.status_code, None
    sid = r.json()["sessionId"]
    read_stream(
        c,
        url,
        sid,
        until=lambda e: e["type"] in ("turn.completed", "turn.failed", "action.approval_requested"),
    )
    return 200, sid


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("usage")
    args = ["--bearer-token", ALICE, "--bearer-token", BOB, "--admin-token", ADMIN]
    served = Served(write_agent(base / SLUG, FILES), base / "state", args, _env(None)).start()
    url = served.url
    auth = {"alice": ALICE, "bob": BOB}
    clients = {
        k: httpx.Client(timeout=30, headers={"authorization": f"Bearer {v}"})
        for k, v in auth.items()
    }
    try:
        for i in range(6):
            status, _ = say(clients["alice"], url, f"What is the weather in town {i}?")
            assert status == 200
        # A long message: its second step would pass the turn's budget, so the turn parks
        # on the budget question, and the caller says no.
        status, sid = say(clients["alice"], url, "What is the weather in Oslo? " + "very " * 4000)
        assert status == 200 and sid is not None
        pending = clients["alice"].get(f"{url}/v1/session/{sid}/approvals").json()["approvals"]
        assert [p["toolName"] for p in pending] == ["budget"], pending
        r = clients["alice"].post(
            f"{url}/v1/session/{sid}/approvals/{pending[0]['callId']}", json={"decision": "deny"}
        )
        assert r.status_code == 200, r.text
        read_stream(clients["alice"], url, sid, until=turn_ends())
        # Bob talks until the daily limit refuses him.
        for i in range(40):
            status, _ = say(
                clients["bob"], url, f"Weather in city {i}, and a long story " + "please " * 300
            )
            if status == 429:
                break
        assert status == 429, "the daily limit never bit"
    finally:
        for c in clients.values():
            c.close()
    served.stop()
    # Spread the sessions over yesterday (UTC), in the order they ran: session k starts at
    # 06:00 plus 40 minutes per session before it, its events keeping their spacing. A day
    # of spend, as if recorded then.
    folders = (base / "state" / SLUG / "sessions").iterdir()
    streams = []
    for folder in folders:
        path = folder / "events.ndjson"
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        streams.append((lines[0]["at"], path, lines))
    day = (datetime.now(UTC) - timedelta(days=1)).replace(hour=6, minute=0, second=0, microsecond=0)
    for k, (_, path, lines) in enumerate(sorted(streams, key=lambda s: s[0])):
        delta = moment(lines[0]["at"]) - (day + timedelta(minutes=40 * k))
        for line in lines:
            line["at"] = stamp(moment(line["at"]) - delta)
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    served.start()
    yield served
    served.stop()
    assert "Traceback" not in served.output(), served.output()


def get(served: Served, token: str, **params: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"}
    return httpx.get(f"{served.url}/v1/usage", params=params, headers=headers, timeout=30)


def test_usage_over_http_who_sees_what(seeded: Served) -> None:
    everyone = get(seeded, ADMIN).json()
    alice = get(seeded, ALICE).json()
    assert get(seeded, ALICE, principal="bob-principal").status_code == 403
    assert httpx.get(f"{seeded.url}/v1/usage", timeout=30).status_code == 401
    assert len(everyone["buckets"]) >= 8  # the hours of the day the sessions ended in
    assert everyone["total"]["turns"] > alice["total"]["turns"] >= 7
    assert len(alice["principals"]) == 1 and len(everyone["principals"]) == 2
    assert [s["principal"] for s in everyone["budgetStops"]] == alice["principals"]
    [reached] = everyone["dailyLimitReached"]
    assert reached["principal"] != alice["principals"][0] and reached["limits"] == ["tokens"]
    assert everyone["dailyLimit"] == {"tokens": 12000, "usd": None}
    one = get(seeded, ADMIN, principal=alice["principals"][0]).json()
    assert one["total"] == alice["total"]
    daily = get(seeded, ADMIN, bucket="day").json()
    assert sum(b["turns"] for b in daily["buckets"]) == everyone["total"]["turns"]
    assert get(seeded, ADMIN, channel="nope").json()["buckets"] == []
    assert get(seeded, ADMIN, since="2999-01-01T00:00:00Z").json()["buckets"] == []
    first, last = everyone["buckets"][0]["start"], everyone["buckets"][-1]["start"]
    window = get(seeded, ADMIN, since=first, until=last).json()
    assert [b["start"] for b in window["buckets"]] == [b["start"] for b in everyone["buckets"][:-1]]
    assert get(seeded, ADMIN, since="yesterday").status_code == 400
    b = everyone["buckets"][0]
    assert b["latencyP50Ms"] <= b["latencyP95Ms"] and b["costUsd"] > 0


def open_usage(page: Any, served: Served) -> Any:
    page.goto(f"{served.url}/playground")
    page.locator("body[data-ready]").wait_for(state="attached")
    page.get_by_label("Token").fill(ADMIN)
    page.get_by_role("button", name="Use").click()
    page.get_by_role("tab", name="Usage").click()
    page.locator("#usage figure.chart").first.wait_for()
    return page.locator("#usage")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_usage_tab_charts_marks_and_filters(
    seeded: Served, page_factory: Any, tmp_path: Path, scheme: str
) -> None:
    page = page_factory(color_scheme=scheme)
    usage = open_usage(page, seeded)
    for cls in ("chart-turns", "chart-tokens", "chart-cost", "chart-latency"):
        fig = usage.locator(f"figure.{cls}")
        label = fig.locator("svg[role=img]").get_attribute("aria-label") or ""
        assert len(label) > 30, (cls, label)
        assert fig.locator("path.chart-line").count() >= 1
        assert fig.locator("rect.chart-hit > title").count() >= 8
        # Where a budget stopped a turn and where the daily limit bit.
        assert fig.locator("g.chart-pause").count() == 1, cls
        assert fig.locator("g.chart-limit").count() == 1, cls
    assert "p95" in (usage.locator("figure.chart-latency svg").get_attribute("aria-label") or "")
    assert "reached the daily limit" in usage.locator(".usage-bites").inner_text()
    assert usage.locator("table.usage-table tr").count() >= 9
    # The tables stay below the charts; a principal filter narrows to one caller.
    principal = usage.get_by_label("Principal")
    options = principal.locator("option").all_inner_texts()
    assert len(options) == 3  # all and the two callers
    everyone = get(seeded, ADMIN).json()["total"]["turns"]
    one = get(seeded, ADMIN, principal=options[1]).json()["total"]["turns"]
    summary = usage.locator("figure.chart-turns svg")
    assert (summary.get_attribute("aria-label") or "").startswith(f"{everyone} turns")
    principal.select_option(index=1)
    page.locator("#usage-principal option:checked", has_text=options[1]).wait_for(state="attached")
    page.locator(f'figure.chart-turns svg[aria-label^="{one} turns"]').wait_for()
    assert one < everyone
    result = page.evaluate(AUDIT)
    assert result["unnamed"] == [] and result["low"] == [], result
    usage.locator("figure.chart").first.screenshot(path=str(tmp_path / f"usage-{scheme}.png"))


def test_usage_tab_fits_a_phone(seeded: Served, page_factory: Any, tmp_path: Path) -> None:
    page = page_factory(width=390, height=844)
    usage = open_usage(page, seeded)
    for fig in usage.locator("figure.chart").all():
        box = fig.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    usage.locator("figure.chart").first.screenshot(path=str(tmp_path / "usage-390.png"))
