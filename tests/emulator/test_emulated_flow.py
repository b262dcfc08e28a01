"""A session through `agentkit serve --emulate-aws` over HTTP: a tool call parked on an
approval, approved, run once; a reminder armed in EventBridge Scheduler that fires back into
the session; a hook that sees every event through the events table's stream."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.emulator.helpers import Emulated, StandIn, emulated, stand_in, wait_for, write_agent

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def standin() -> Iterator[StandIn]:
    with stand_in() as service:
        yield service


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, standin: StandIn) -> Iterator[Emulated]:
    project = write_agent(tmp_path_factory.mktemp("emulated") / "project")
    with emulated(project, standin) as running:
        yield running


def settled(server: Emulated, session_id: str, *states: str) -> str | None:
    status = server.status(session_id)
    return status if status in states else None


def test_meta_reports_the_emulated_host(server: Emulated) -> None:
    code, body = server.call("GET", "/v1/meta", token=None)
    assert code == 200
    assert body["host"] == "aws-emulated"


def test_a_request_without_the_bearer_token_is_refused(server: Emulated) -> None:
    code, body = server.call("POST", "/v1/session", {"message": "hi"}, token=None)
    assert code == 401
    assert body["ok"] is False


def test_a_body_over_six_megabytes_is_refused_by_the_gateway(server: Emulated) -> None:
    code, body = server.call("POST", "/v1/session", {"message": "x" * (6 * 1024 * 1024 + 1)})
    assert code == 413
    assert body == {"message": "Request Entity Too Large"}


def test_approval_tool_call_reminder_and_hooks(server: Emulated, standin: StandIn) -> None:
    code, started = server.call("POST", "/v1/session", {"message": "deploy it"})
    assert code == 200, started
    session_id = started["sessionId"]
    wait_for(lambda: settled(server, session_id, "awaiting_approval"), 120, "the approval")
    code, pending = server.call("GET", f"/v1/session/{session_id}/approvals")
    assert code == 200
    (approval,) = pending["approvals"]
    assert approval["toolName"] == "deploy"
    effect = f"{session_id}:{approval['callId']}"
    assert standin.effects[effect] == 0  # parked: nothing ran yet

    code, decided = server.call(
        "POST", f"/v1/session/{session_id}/approvals/{approval['callId']}", {"decision": "approve"}
    )
    assert code == 200, decided
    wait_for(lambda: settled(server, session_id, "idle", "completed"), 120, "the approved turn")
    assert standin.effects[effect] == 1

    code, followed = server.call(
        "POST",
        f"/v1/session/{session_id}",
        {"message": "remind me", "continuationToken": started["continuationToken"]},
    )
    assert code == 200, followed

    def reminded() -> bool:
        return any(
            e["type"] == "message.received" and e["data"].get("source") == "reminder"
            for e in server.events(session_id)
        )

    wait_for(reminded, 120, "the reminder to fire back into the session")
    wait_for(lambda: settled(server, session_id, "idle", "completed"), 120, "the reminded turn")

    events = server.events(session_id)
    assert [e["index"] for e in events] == list(range(len(events)))

    def unseen() -> set[int]:
        seen = {(c["sessionId"], c["index"]) for c in server.hook_calls()}
        return {e["index"] for e in events if (session_id, e["index"]) not in seen}

    try:
        wait_for(lambda: not unseen(), 60, "the hook to see every event")
    except AssertionError:
        raise AssertionError(f"hooks never saw {sorted(unseen())}") from None
