"""Calls a crash left in doubt are settled: a tool's `reconcile` says what happened, an
idempotent tool runs again with the same key, and the rest is recorded as unknown.

Each test runs one call in a real child process, kills it with SIGKILL at a named point
(see `reconcile_rig`), and recovers on the file store or on DynamoDB (moto over HTTP). The
stand-in service counts the effects applied under each idempotency key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.engine.tools.reconcile import NOT_DONE_ERROR
from agentkit.engine.turn.ending import IN_DOUBT
from agentkit.events import Event
from agentkit.models.scripted import ScriptedModel, Step
from agentkit.sessions import SessionStatus, fold_status

from .conftest import settle
from .reconcile_rig import (
    OWNER,
    EffectsService,
    crash_at,
    idempotency_key,
    runtime,
    wait_lease_free,
    write_project,
)

pytestmark = pytest.mark.slow(reason="kills a real process mid-call")


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[EffectsService]:
    served = EffectsService()
    monkeypatch.setenv("EFFECTS_URL", served.url)  # the recovering runtime's tools call it too
    try:
        yield served
    finally:
        served.close()


@pytest.fixture
def files_spec(tmp_path: Path) -> str:
    return f"files:{tmp_path / 'state'}"


@pytest.fixture
def dynamodb_spec(dynamodb_store_factory: Callable[..., Any]) -> str:
    s = dynamodb_store_factory().settings
    return f"dynamodb:{s.endpoint_url}|{s.sessions_table}|{s.events_table}"


async def crash_and_recover(
    service: EffectsService, tmp_path: Path, spec: str, tool: str, point: str, how: str = "recover"
) -> tuple[list[Event], str]:
    """Kill the call at `point`, recover, and return the session's events and the call's
    idempotency key."""
    project = write_project(tmp_path / "proj")
    state = tmp_path / "state"
    crashed = await asyncio.to_thread(crash_at, service, project, spec, state, tool, point)
    rt = runtime(project, spec, state, ScriptedModel([Step.text("after the crash")]))
    try:
        await wait_lease_free(rt.store, crashed.session_id)
        if how == "recover":
            await rt.recover()
        else:
            await rt.run_turn(crashed.session_id, crashed.turn_id)  # a redelivered turn
        await settle(rt)
        events = await rt.store.read(crashed.session_id)
        assert fold_status(events) == SessionStatus.IDLE
        ends = [e.type for e in events if e.type in ("turn.completed", "turn.failed")]
        assert ends == ["turn.failed"]
        # The session takes messages afterwards, and the model sees what happened.
        await rt.follow_up(crashed.session_id, crashed.token, "and now?", principal=OWNER)
        await settle(rt)
        after = await rt.store.read(crashed.session_id)
        assert after[-2].type == "turn.completed"
    finally:
        await rt.store.close()
    return events, idempotency_key(crashed.session_id, "c1")


def result_of(events: list[Event]) -> dict[str, Any]:
    (result,) = [e for e in events if e.type == "action.result" and e.data["callId"] == "c1"]
    return dict(result.data)


# ---- the file store: every point of the idempotent tool with a reconcile --------------


async def test_killed_before_sending_an_idempotent_call_is_rerun_with_its_key(
    service: EffectsService, tmp_path: Path, files_spec: str
) -> None:
    events, key = await crash_and_recover(service, tmp_path, files_spec, "charge", "before")
    result = result_of(events)
    assert result["outcome"] == "rerun"
    assert result["isError"] is False
    assert result["result"] == {"id": "fx1", "amount": 5}
    assert service.effects.count(key) == 1


@pytest.mark.parametrize("point", ["sent", "acked"])
async def test_killed_after_the_effect_the_call_is_reconciled_not_repeated(
    service: EffectsService, tmp_path: Path, files_spec: str, point: str
) -> None:
    events, key = await crash_and_recover(service, tmp_path, files_spec, "charge", point)
    result = result_of(events)
    assert result["outcome"] == "reconciled"
    assert result["result"] == {"id": "fx1", "amount": 5}
    assert service.effects.count(key) == 1


async def test_killed_after_the_result_was_recorded_nothing_is_settled_again(
    service: EffectsService, tmp_path: Path, files_spec: str
) -> None:
    events, key = await crash_and_recover(service, tmp_path, files_spec, "charge", "recorded")
    result = result_of(events)
    assert "outcome" not in result  # recorded by the call itself, before the crash
    assert result["result"] == {"id": "fx1", "amount": 5}
    assert service.effects.count(key) == 1


async def test_a_redelivered_turn_settles_its_call_in_doubt_too(
    service: EffectsService, tmp_path: Path, files_spec: str
) -> None:
    events, key = await crash_and_recover(
        service, tmp_path, files_spec, "charge", "sent", how="redeliver"
    )
    assert result_of(events)["outcome"] == "reconciled"
    assert service.effects.count(key) == 1


# ---- the other kinds of tool -------------------------------------------------------------


async def test_not_done_from_a_tool_that_is_not_idempotent_is_reported_not_rerun(
    service: EffectsService, tmp_path: Path, files_spec: str
) -> None:
    events, key = await crash_and_recover(service, tmp_path, files_spec, "notify", "before")
    result = result_of(events)
    assert result["outcome"] == "reconciled"
    assert result["isError"] is True
    assert result["error"] == NOT_DONE_ERROR
    assert service.effects.count(key) == 0


async def test_a_reconcile_that_finds_the_effect_of_a_plain_api_reports_it(
    service: EffectsService, tmp_path: Path, files_spec: str
) -> None:
    events, key = await crash_and_recover(service, tmp_path, files_spec, "notify", "sent")
    assert result_of(events)["outcome"] == "reconciled"
    assert result_of(events)["result"] == {"id": "fx1", "amount": 5}
    assert service.effects.count(key) == 1


async def test_an_idempotent_tool_without_reconcile_is_rerun_and_its_api_dedupes(
    service: EffectsService, tmp_path: Path, files_spec: str
) -> None:
    events, key = await crash_and_recover(service, tmp_path, files_spec, "retry", "sent")
    result = result_of(events)
    assert result["outcome"] == "rerun"
    assert result["result"] == {"id": "fx1", "amount": 5}
    assert service.effects.count(key) == 1


async def test_a_tool_with_neither_is_reported_unknown_and_not_rerun(
    service: EffectsService, tmp_path: Path, files_spec: str
) -> None:
    events, key = await crash_and_recover(service, tmp_path, files_spec, "plain", "sent")
    result = result_of(events)
    assert result["outcome"] == "unknown"
    assert result["error"] == IN_DOUBT
    assert service.effects.count(key) == 1


# ---- DynamoDB (moto over HTTP) ----------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "point", "outcome", "effects"),
    [
        ("charge", "before", "rerun", 1),
        ("charge", "sent", "reconciled", 1),
        ("notify", "before", "reconciled", 0),
    ],
)
async def test_on_dynamodb_calls_in_doubt_are_settled(
    service: EffectsService,
    tmp_path: Path,
    dynamodb_spec: str,
    tool: str,
    point: str,
    outcome: str,
    effects: int,
) -> None:
    events, key = await crash_and_recover(service, tmp_path, dynamodb_spec, tool, point)
    assert result_of(events)["outcome"] == outcome
    assert service.effects.count(key) == effects
