"""Approvals park the turn; the decision resumes it, even in a new process over the same data."""

from __future__ import annotations

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.errors import Conflict, Forbidden, NotFound
from agentkit.events import ActionApprovalResolved, ActionResult, TurnCompleted
from agentkit.models.base import ModelRequest, ToolResultMessage
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.sessions import SessionStatus, fold_status

from .conftest import ALICE, BOB, Env, check_vocabulary, settle, turn_events
from .side_effects import deploy_calls


def deploy_then_answer() -> list[Step]:
    def answer(request: ModelRequest) -> Step:
        last = request.messages[-1]
        assert isinstance(last, ToolResultMessage)
        return Step.text(("denied: " if last.is_error else "done: ") + last.content)

    return [
        Step.tool_calls(
            call("deploy", {"env": "prod"}, id="d1"), call("add", {"a": 2, "b": 3}, id="a1")
        ),
        Step.respond(answer),
    ]


async def park(env: Env) -> tuple[str, str]:
    rt = env.runtime(ScriptedModel(deploy_then_answer()[:1]))
    acc = await rt.start_session("ship it", principal=ALICE)
    await settle(rt)
    return acc.session_id, acc.turn_id


async def test_approval_parks_the_turn(env: Env) -> None:
    sid, turn = await park(env)
    rt = env.runtimes[-1]
    events = await rt.store.read(sid)
    check_vocabulary(events)
    order = turn_events(events, turn)
    assert order[order.index("actions.requested") :] == [
        "actions.requested",
        "action.result",
        "action.approval_requested",
        "step.completed",
    ]
    assert fold_status(events) == SessionStatus.AWAITING_APPROVAL
    pending = await rt.approvals(sid, principal=ALICE)
    assert [(p.call_id, p.tool_name, p.arguments, p.turn_id) for p in pending] == [
        ("d1", "deploy", {"env": "prod"}, turn)
    ]
    assert await rt.store.get_lease(sid) is None  # parked turns hold no lease


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_approval_resolves_across_a_restart(env: Env, decision: str) -> None:
    sid, turn = await park(env)
    # A new process: new runtime, new store over the same data, the rest of the script.
    rt = env.runtime(ScriptedModel(deploy_then_answer()[1:]))
    await rt.recover()
    assert [p.call_id for p in await rt.approvals(sid, principal=ALICE)] == ["d1"]
    await rt.resolve_approval(sid, "d1", decision, principal=ALICE)  # type: ignore[arg-type]
    await settle(rt)
    events = await rt.store.read(sid)
    check_vocabulary(events)
    order = turn_events(events, turn)
    # An approved call is marked started (durably) before it runs; a denied one never runs.
    started = ["action.started"] if decision == "approve" else []
    assert order[order.index("action.approval_requested") :] == [
        "action.approval_requested",
        "step.completed",
        "action.approval_resolved",
        *started,
        "action.result",
        "step.started",
        "message.appended",
        "message.completed",
        "step.completed",
        "turn.completed",
        "session.waiting",
    ]
    resolved = next(e for e in events if e.type == "action.approval_resolved")
    payload = resolved.as_(ActionApprovalResolved)
    assert payload.decision == decision and payload.principal == "alice"
    result = [e.as_(ActionResult) for e in events if e.type == "action.result"][-1]
    reply = events[-2].as_(TurnCompleted).result
    # the tool's own record: it ran exactly once when approved, never when denied
    assert deploy_calls(rt) == (["prod"] if decision == "approve" else [])
    if decision == "approve":
        assert result.result == {"deployed": "prod"}
        assert reply == 'done: {"deployed": "prod"}'
    else:
        assert result.is_error and "denied" in (result.error or "")
        assert reply.startswith("denied: ")
    assert await rt.approvals(sid, principal=ALICE) == []


async def test_an_approval_resolves_once(env: Env) -> None:
    sid, _ = await park(env)
    rt = env.runtime(ScriptedModel(deploy_then_answer()[1:]))
    await rt.resolve_approval(sid, "d1", "deny", principal=ALICE)
    await settle(rt)
    with pytest.raises(Conflict) as err:
        await rt.resolve_approval(sid, "d1", "approve", principal=ALICE)
    assert err.value.code == "already_resolved"
    await settle(rt)
    assert deploy_calls(rt) == []  # the late approval ran nothing


async def test_an_approval_cannot_be_replayed_onto_another_call(env: Env) -> None:
    sid, _ = await park(env)
    rt = env.runtimes[-1]
    with pytest.raises(NotFound):
        await rt.resolve_approval(sid, "a1", "approve", principal=ALICE)
    with pytest.raises(NotFound):
        await rt.resolve_approval(sid, "made-up", "approve", principal=ALICE)


async def test_only_the_owner_resolves(env: Env) -> None:
    sid, _ = await park(env)
    rt = env.runtimes[-1]
    with pytest.raises(Forbidden):
        await rt.resolve_approval(sid, "d1", "approve", principal=BOB)


async def test_a_duplicate_resume_runs_the_approved_tool_once(env: Env) -> None:
    sid, turn = await park(env)
    rt = env.runtime(ScriptedModel(deploy_then_answer()[1:]))
    await rt.resolve_approval(sid, "d1", "approve", principal=ALICE)
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    await dispatcher.dispatch(sid, turn)  # at-least-once delivery: a second copy
    await settle(rt)
    events = await rt.store.read(sid)
    d1_results = [e for e in events if e.type == "action.result" and e.data["callId"] == "d1"]
    assert len(d1_results) == 1
    assert sum(1 for e in events if e.type == "turn.completed") == 1
    assert deploy_calls(rt) == ["prod"]  # the tool itself ran once, not once per copy


async def test_a_follow_up_abandons_a_parked_turn(env: Env) -> None:
    rt = env.runtime(ScriptedModel([deploy_then_answer()[0], Step.text("new answer")]))
    acc = await rt.start_session("ship it", principal=ALICE)
    await settle(rt)
    nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "never mind", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    d1 = next(e for e in events if e.type == "action.result" and e.data["callId"] == "d1")
    assert d1.data["isError"] and "did not run" in d1.data["error"]
    failed = next(e for e in events if e.type == "turn.failed")
    assert failed.turn_id == acc.turn_id and failed.data["error"] == "turn interrupted"
    assert deploy_calls(rt) == []
    assert events[-2].type == "turn.completed" and events[-2].turn_id == nxt.turn_id


async def test_a_decision_recorded_for_other_arguments_does_not_run_the_tool(env: Env) -> None:
    from agentkit.engine.folds.pending_approvals import arguments_digest
    from agentkit.events import draft

    sid, turn = await park(env)
    rt = env.runtime(ScriptedModel(deploy_then_answer()[1:]))
    forged = ActionApprovalResolved(
        call_id="d1",
        decision="approve",
        principal="alice",
        argumentsDigest=arguments_digest({"env": "staging"}),
    )
    await rt.store.append(sid, [draft(forged, turn_id=turn)])
    await rt.run_turn(sid, turn)
    events = await rt.store.read(sid)
    d1 = next(e for e in events if e.type == "action.result" and e.data["callId"] == "d1")
    assert d1.data["isError"] and d1.data["error"] == "approval does not match the requested call"
    assert deploy_calls(rt) == []  # neither the forged arguments nor the parked ones ran
