"""Item 4: a direct tool call (`POST /v1/tools/<name>`) never skips the tool's approval rule,
over HTTP against `agentkit serve`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, _env, write_agent
from tests.server.helpers import dump, read_stream, start_session, turn_ends

TRANSFER = """
    from pydantic import BaseModel
    from agentkit import define_tool


    class TransferInput(BaseModel):
        amount: int = 1


    @define_tool(
        description="Move money (large amounts need approval).",
        needs_approval=lambda i: i.amount > 100,
    )
    def transfer(input: TransferInput, ctx) -> dict:
        return {"moved": input.amount}
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module: each test's calls go to a session of its own (or to none,
    and those change nothing the others read)."""
    base = tmp_path_factory.mktemp("direct-approval")
    project = write_agent(base / SLUG, {**AGENT_FILES, "agent/tools/transfer.py": TRANSFER})
    server = Served(project, base / "state", [], _env({})).start()
    yield server
    server.stop()


def _idle_session(client: httpx.Client, url: str) -> tuple[str, str]:
    body = start_session(client, url, "hello")
    sid = str(body["sessionId"])
    read_stream(client, url, sid, until=turn_ends())
    return sid, str(body["continuationToken"])


def _of(events: list[dict[str, Any]], kind: str, call_id: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind and e["data"].get("callId") == call_id]


def test_without_a_session_an_approval_tool_is_refused(served: Served) -> None:
    with httpx.Client(timeout=60) as client:
        r = client.post(f"{served.url}/v1/tools/wipe_notes", json={"input": {"folder": "all"}})
        assert r.status_code == 403, r.text
        body = r.json()
        assert body["ok"] is False and body["error"] == "approval_required"
        assert "sessionId" in body["message"]
        # A predicate that says no for this input runs at once, as before.
        small = client.post(f"{served.url}/v1/tools/transfer", json={"input": {"amount": 5}})
        assert small.status_code == 200 and small.json()["result"] == {"moved": 5}
        big = client.post(f"{served.url}/v1/tools/transfer", json={"input": {"amount": 500}})
        assert big.status_code == 403 and big.json()["error"] == "approval_required"


def test_with_a_session_the_call_parks_and_runs_once_approved(served: Served) -> None:
    url = served.url
    with httpx.Client(timeout=60) as client:
        sid, token = _idle_session(client, url)
        r = client.post(
            f"{url}/v1/tools/wipe_notes", json={"input": {"folder": "all"}, "sessionId": sid}
        )
        assert r.status_code == 202, r.text
        parked = r.json()
        assert parked["status"] == "pending_approval"
        call_id = parked["callId"]
        events = dump(client, url, sid)
        assert _of(events, "action.approval_requested", call_id)
        assert any(
            a["callId"] == call_id
            for e in events
            if e["type"] == "actions.requested"
            for a in e["data"]["actions"]
        )
        assert not _of(events, "action.result", call_id)  # it has not run
        pending = client.get(f"{url}/v1/session/{sid}/approvals").json()["approvals"]
        assert [p["callId"] for p in pending] == [call_id]
        decided = client.post(
            f"{url}/v1/session/{sid}/approvals/{call_id}", json={"decision": "approve"}
        )
        assert decided.status_code == 200, decided.text
        results = _of(dump(client, url, sid), "action.result", call_id)
        assert [(e["data"]["isError"], e["data"]["result"]) for e in results] == [
            (False, {"wiped": "all"})
        ]
        # Decided: nothing left pending, and the session takes messages again.
        assert client.get(f"{url}/v1/session/{sid}/approvals").json()["approvals"] == []
        again = client.post(
            f"{url}/v1/session/{sid}", json={"message": "thanks", "continuationToken": token}
        )
        assert again.status_code == 200, again.text


def test_a_denied_direct_call_never_runs(served: Served) -> None:
    url = served.url
    with httpx.Client(timeout=60) as client:
        sid, _ = _idle_session(client, url)
        r = client.post(
            f"{url}/v1/tools/transfer", json={"input": {"amount": 900}, "sessionId": sid}
        )
        assert r.status_code == 202, r.text
        call_id = r.json()["callId"]
        denied = client.post(
            f"{url}/v1/session/{sid}/approvals/{call_id}", json={"decision": "deny"}
        )
        assert denied.status_code == 200, denied.text
        [result] = _of(dump(client, url, sid), "action.result", call_id)
        assert result["data"]["isError"] is True
        assert "denied" in result["data"]["error"]
