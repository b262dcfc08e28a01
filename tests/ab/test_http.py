"""Over HTTP against `agentkit serve`: enrollment, stickiness, `/v1/abs`, the daily limit."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.authoring.ab import define_ab, variant
from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, _env, write_agent
from tests.server.helpers import dump, read_stream, turn_ends

pytestmark = pytest.mark.slow(reason="runs experiments over HTTP")

TONE = define_ab(variants={"control": variant(), "concise": variant(weight=2)})
PER_USER = define_ab(sticky="principal", variants={"control": variant(), "terse": variant()})

FILES = {
    **AGENT_FILES,
    "agent/agent.py": """
        from agentkit import define_agent

        agent = define_agent(
            model="test", max_steps=6, budget={"principal_daily_tokens": 1_000_000}
        )
    """,
    "agent/ab.py": """
        from agentkit import define_ab, variant

        ab = define_ab(
            name="tone",
            variants={
                "control": variant(),
                "concise": variant(weight=2, instructions="Answer in one sentence."),
            },
        )
    """,
    "agent/ab/per_user.py": """
        from agentkit import define_ab, variant

        ab = define_ab(
            sticky="principal",
            variants={"control": variant(), "terse": variant(instructions="Be terse.")},
        )
    """,
    "agent/ab.config.py": """
        from agentkit import define_ab_config

        config = define_ab_config(max_playground_sessions=100, durable_snapshots=False)
    """,
}
TOKENS = ["alpha-secret-token-0001", "bravo-secret-token-0002", "charlie-secret-token-03"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("abserve")
    project = write_agent(base / SLUG, FILES)
    args = [a for t in TOKENS for a in ("--bearer-token", t)]
    s = Served(project, base / "state", args, _env(None)).start()
    yield s
    s.stop()
    assert "Traceback" not in s.output(), s.output()


def client_for(token: str) -> httpx.Client:
    return httpx.Client(timeout=30, headers={"authorization": f"Bearer {token}"})


def run_session(c: httpx.Client, url: str, message: str) -> tuple[str, str, list[dict[str, Any]]]:
    r = c.post(f"{url}/v1/session", json={"message": message})
    assert r.status_code == 200, r.text
    sid = r.json()["sessionId"]
    return sid, r.json()["continuationToken"], read_stream(c, url, sid, until=turn_ends())


def test_enrollment_and_stickiness(served: Served) -> None:
    url = served.url
    per_user: dict[str, set[str]] = defaultdict(set)
    tone_seen: set[str] = set()
    # Session ids are random and `tone` weighs 1:2, so twelve sessions all land on one arm
    # about once in 130 runs: go on (up to 48, a chance of 4e-9) until both arms are seen.
    for i in range(48):
        if i >= 12 and len(tone_seen) == 2:
            break
        token = TOKENS[i % 2]
        with client_for(token) as c:
            sid, token_, events = run_session(c, url, f"What is the weather in city {i}?")
            assert [e["type"] for e in events[:4]] == [
                "session.started",
                "ab.assigned",
                "ab.assigned",
                "message.received",
            ]
            principal = events[0]["data"]["principal"]
            arms = {e["data"]["experiment"]: e["data"]["variant"] for e in events[1:3]}
            assert arms["tone"] == TONE.assign("tone", sid)
            assert arms["per_user"] == PER_USER.assign("per_user", "principal:" + principal)
            per_user[token].add(arms["per_user"])
            tone_seen.add(arms["tone"])
            # A follow-up keeps the session's arms: enrollment happens once, at creation.
            if i < 2:
                r = c.post(
                    f"{url}/v1/session/{sid}",
                    json={"message": "and tomorrow?", "continuationToken": token_},
                )
                assert r.status_code == 200, r.text
                read_stream(c, url, sid, start=len(events), until=turn_ends())
                again = dump(c, url, sid)
                assert sum(e["type"] == "ab.assigned" for e in again) == 2
                assert sum(e["type"] == "turn.completed" for e in again) == 2
    assert all(len(v) == 1 for v in per_user.values()), per_user
    assert tone_seen == {"control", "concise"}


def at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def test_abs_totals_equal_an_independent_fold(served: Served) -> None:
    url = served.url
    sessions: dict[str, list[dict[str, Any]]] = {}
    for i in range(6):
        with client_for(TOKENS[2]) as c:
            run_session(c, url, f"weather in town {i}")
    # Two turns with an approval, one denied: approvals asked and denied, and a tool error.
    for decision in ("approve", "deny"):
        with client_for(TOKENS[2]) as c:
            r = c.post(f"{url}/v1/session", json={"message": "please wipe the notes folder"})
            sid = r.json()["sessionId"]
            read_stream(c, url, sid, until=lambda e: e["type"] == "action.approval_requested")
            [pending] = c.get(f"{url}/v1/session/{sid}/approvals").json()["approvals"]
            r = c.post(
                f"{url}/v1/session/{sid}/approvals/{pending['callId']}",
                json={"decision": decision},
            )
            assert r.status_code == 200, r.text
            read_stream(c, url, sid, until=turn_ends())
    # Every session of every caller, folded here by hand.
    for token in TOKENS:
        with client_for(token) as c:
            r = c.get(f"{url}/v1/sessions", params={"limit": 100})
            assert r.status_code == 200, r.text
            for item in r.json()["sessions"]:
                sessions[item["sessionId"]] = dump(c, url, item["sessionId"])
    expected: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for events in sessions.values():
        arms = {
            e["data"]["experiment"]: e["data"]["variant"]
            for e in events
            if e["type"] == "ab.assigned"
        }
        for key in arms.items():
            expected[key]["sessions"] += 1
        for e in events:
            if e["type"] not in ("turn.completed", "turn.failed"):
                continue
            for key in arms.items():
                row = expected[key]
                row["turns"] += 1
                row["completed"] += e["type"] == "turn.completed"
                row["inputTokens"] += e["data"]["usage"]["inputTokens"]
                row["outputTokens"] += e["data"]["usage"]["outputTokens"]
                mine = [x for x in events if x.get("turnId") == e["turnId"]]
                row["toolCalls"] += sum(x["type"] == "action.result" for x in mine)
                row["toolErrors"] += sum(
                    x["type"] == "action.result" and x["data"]["isError"] for x in mine
                )
                row["steps"] += sum(x["type"] == "step.completed" for x in mine)
                row["approvalsRequested"] += sum(
                    x["type"] == "action.approval_requested" for x in mine
                )
                row["approvalsDenied"] += sum(
                    x["type"] == "action.approval_resolved" and x["data"]["decision"] == "deny"
                    for x in mine
                )
                [received] = [x for x in mine if x["type"] == "message.received"]
                row["latencyMs"] += (at(e["at"]) - at(received["at"])).total_seconds() * 1000
    with client_for(TOKENS[2]) as c:
        r = c.get(f"{url}/v1/abs")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["config"] == {
        "maxPlaygroundSessions": 100,
        "durableSamples": True,
        "durableSnapshots": False,
    }
    assert "mSPRT" in body["method"]
    # The caller sees its own sessions' assignments only.
    assert {row["sessionId"] for row in body["sessions"]} <= set(sessions)
    assert len(body["sessions"]) == 8  # the six weather sessions and the two approvals
    got = {e["name"]: e for e in body["experiments"]}
    assert set(got) == {"tone", "per_user"}
    for (experiment, arm), row in expected.items():
        arm_body = got[experiment]["arms"][arm]
        assert arm_body["sessions"] == row["sessions"], (experiment, arm)
        assert arm_body["turns"] == row["turns"]
        totals = arm_body["totals"]
        metrics = ("completed", "inputTokens", "outputTokens", "toolCalls", "toolErrors")
        more = ("steps", "approvalsRequested", "approvalsDenied", "latencyMs")
        for metric in (*metrics, *more):
            got_total = totals.get(metric, 0.0)
            assert got_total == pytest.approx(row[metric], abs=1e-3), (experiment, arm, metric)
    assert sum(row["approvalsDenied"] for row in expected.values()) >= 2  # both experiments
    tone = got["tone"]
    assert tone["srm"]["observed"] == {
        k: int(expected[("tone", k)]["sessions"]) for k in ("concise", "control")
    }
    assert tone["comparisons"]["concise"]["costUsd"]["status"] == "not enough data"


def test_daily_limit_answers_429_with_retry_after(tmp_path: Path) -> None:
    files = {
        **FILES,
        "agent/agent.py": """
            from agentkit import define_agent

            agent = define_agent(model="test", max_steps=6, budget={"principal_daily_tokens": 1})
        """,
    }
    project = write_agent(tmp_path / SLUG, files)
    args = [a for t in TOKENS[:2] for a in ("--bearer-token", t)]
    served = Served(project, tmp_path / "state", args, _env(None)).start()
    try:
        with client_for(TOKENS[0]) as c:
            sid, token, _ = run_session(c, served.url, "weather in Rome")  # > one token
            r = c.post(f"{served.url}/v1/session", json={"message": "again"})
            assert r.status_code == 429, r.text
            assert r.json()["ok"] is False and r.json()["error"] == "rate_limited"
            retry = int(r.headers["retry-after"])
            assert 0 < retry <= 86_401
            # A follow-up in the caller's existing session is refused the same way.
            body = {"message": "and tomorrow?", "continuationToken": token}
            r = c.post(f"{served.url}/v1/session/{sid}", json=body)
            assert r.status_code == 429, r.text
            assert int(r.headers["retry-after"]) > 0
        with client_for(TOKENS[1]) as c:  # another caller still has its own day
            r = c.post(f"{served.url}/v1/session", json={"message": "hello"})
            assert r.status_code == 200, r.text
    finally:
        served.stop()


def test_sessions_listing_and_trajectory_show_cost(tmp_path: Path) -> None:
    files = {
        **FILES,
        "agent/agent.py": """
            from agentkit import define_agent

            agent = define_agent(
                model="test", max_steps=6, prices={"test": {"input": 1000, "output": 1000}}
            )
        """,
    }
    project = write_agent(tmp_path / SLUG, files)
    served = Served(project, tmp_path / "state", [], _env(None)).start()
    try:
        with httpx.Client(timeout=30) as c:
            sid, _, events = run_session(c, served.url, "weather in Lima")
            done = events[-1]
            assert done["type"] == "turn.completed"
            usage = done["data"]["usage"]
            expected = (usage["inputTokens"] + usage["outputTokens"]) * 1000 / 1e6
            assert done["data"]["costUsd"] == pytest.approx(expected)
            listed = c.get(f"{served.url}/v1/sessions").json()["sessions"]
            row = next(s for s in listed if s["sessionId"] == sid)
            assert row["costUsd"] == pytest.approx(expected)
    finally:
        served.stop()
    trace = tmp_path / "events.ndjson"
    trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = subprocess.run(
        [sys.executable, "-m", "agentkit.cli", "trajectory", "--events", str(trace)],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout)
    assert result["costUsd"] == pytest.approx(expected)
    assert set(result["abs"]) == {"tone", "per_user"}


def test_a_budget_parks_the_turn_and_the_approvals_route_continues_it(tmp_path: Path) -> None:
    # The test model's weather turn is two steps of about 200-280 tokens: the first step runs,
    # the second would pass 300 tokens, so the turn parks on "budget exceeded: continue?"
    # until a person answers over HTTP (and an approval grants one more 300).
    files = {
        **AGENT_FILES,
        "agent/agent.py": """
            from agentkit import define_agent

            agent = define_agent(model="test", max_steps=6, budget={"turn_tokens": 300})
        """,
    }
    project = write_agent(tmp_path / SLUG, files)
    served = Served(project, tmp_path / "state", [], _env(None)).start()
    try:
        with httpx.Client(timeout=30) as c:
            url = served.url
            parked = lambda e: e["type"] == "action.approval_requested"  # noqa: E731

            def pending_budget(sid: str) -> str:
                pending = c.get(f"{url}/v1/session/{sid}/approvals").json()["approvals"]
                assert [p["toolName"] for p in pending] == ["budget"], pending
                assert pending[0]["arguments"]["reason"].startswith("budget exceeded")
                return str(pending[0]["callId"])

            r = c.post(f"{url}/v1/session", json={"message": "What is the weather in Paris?"})
            assert r.status_code == 200, r.text
            sid, token = r.json()["sessionId"], r.json()["continuationToken"]
            events = read_stream(c, url, sid, until=parked)
            assert sum(e["type"] == "step.completed" for e in events) == 1
            # Each approval grants one more budget's worth; approve until the turn is done.
            approvals = 0
            while events[-1]["type"] == "action.approval_requested":
                call_id = pending_budget(sid)
                body = {"decision": "approve"}
                r = c.post(f"{url}/v1/session/{sid}/approvals/{call_id}", json=body)
                assert r.status_code == 200, r.text
                approvals += 1
                more = read_stream(
                    c,
                    url,
                    sid,
                    start=events[-1]["index"] + 1,
                    until=lambda e: parked(e) or e["type"] in ("turn.completed", "turn.failed"),
                )
                events += more
                assert approvals < 6, events
            assert events[-1]["type"] == "turn.completed", events[-1]
            assert approvals == 1
            assert sum(e["type"] == "step.completed" for e in events) == 2

            # Denied, the turn ends as failed with a message that says why.
            start = len(dump(c, url, sid))
            body = {"message": "And in Oslo?", "continuationToken": token}
            r = c.post(f"{url}/v1/session/{sid}", json=body)
            assert r.status_code == 200, r.text
            read_stream(c, url, sid, start=start, until=parked)
            call_id = pending_budget(sid)
            r = c.post(f"{url}/v1/session/{sid}/approvals/{call_id}", json={"decision": "deny"})
            assert r.status_code == 200, r.text
            ends = read_stream(c, url, sid, start=start, until=turn_ends())
            assert ends[-1]["type"] == "turn.failed", ends[-1]
            assert ends[-1]["data"]["error"] == (
                "budget exceeded: the request to continue was denied"
            )
    finally:
        served.stop()


def test_the_timeline_route_takes_the_same_auth_and_ends_at_the_readout(served: Served) -> None:
    url = served.url
    with client_for(TOKENS[0]) as c:
        for i in range(3):
            run_session(c, url, f"timeline weather {i}")
        timeline = c.get(f"{url}/v1/abs/timeline")
        readout = c.get(f"{url}/v1/abs")
        unknown = c.get(f"{url}/v1/abs/timeline", params={"experiment": "nope"})
        one = c.get(f"{url}/v1/abs/timeline", params={"experiment": "tone", "maxPoints": 2})
    assert httpx.get(f"{url}/v1/abs/timeline", timeout=30).status_code == 401
    assert timeline.status_code == 200, timeline.text
    assert unknown.status_code == 404 and unknown.json()["error"] == "experiment_not_found"
    got = {x["name"]: x for x in timeline.json()["experiments"]}
    assert set(got) == {"tone", "per_user"}
    for x in readout.json()["experiments"]:
        for arm, totals in x["arms"].items():
            series = got[x["name"]]["arms"][arm]
            last = series[-1] if series else {"sessions": 0, "turns": 0}
            assert (last["sessions"], last["turns"]) == (totals["sessions"], totals["turns"])
    assert [x["name"] for x in one.json()["experiments"]] == ["tone"]
    assert all(len(s) <= 2 for s in one.json()["experiments"][0]["arms"].values())
