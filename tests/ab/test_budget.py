"""Budgets: a turn parks on "budget exceeded: continue?" before overspending."""

from __future__ import annotations

from datetime import datetime

import pytest

from agentkit.events import Usage
from agentkit.models.base import ModelRequest
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.sessions import Principal, SessionStatus, fold_status

from .conftest import PRICES, RuntimeFactory, agent_py, settle

ALICE = Principal("alice")
HUNDRED = Usage(input_tokens=80, output_tokens=20)


def add_steps(n: int) -> list[Step]:
    steps = [Step.tool_calls(call("add", {"a": i, "b": 1}), usage=HUNDRED) for i in range(n)]
    return [*steps, Step.text("all done", usage=HUNDRED)]


async def parked(make_runtime: RuntimeFactory) -> tuple[object, ScriptedModel, str]:
    # 100 tokens a step, 500 a turn: steps 1-5 run (the fifth, at 400 spent, is told the
    # budget is nearly gone), the sixth would pass 500 and parks instead.
    model = ScriptedModel(add_steps(5))
    rt = make_runtime(
        {"agent/agent.py": agent_py(prices=PRICES, budget={"turn_tokens": 500})},
        lambda _id: model,
    )
    acc = await rt.start_session("count", principal=ALICE)
    await settle(rt)
    return rt, model, acc.session_id


async def test_a_turn_parks_before_passing_its_budget(make_runtime: RuntimeFactory) -> None:
    rt, model, sid = await parked(make_runtime)
    events = await rt.store.read(sid)  # type: ignore[attr-defined]
    assert len(model.requests) == 5
    assert fold_status(events) == SessionStatus.AWAITING_APPROVAL
    pending = await rt.approvals(sid, principal=ALICE)  # type: ignore[attr-defined]
    assert [p.tool_name for p in pending] == ["budget"]
    assert pending[0].arguments["reason"].startswith("budget exceeded: this turn has used 500")
    # The step at 80% or more of the budget was told what remains; earlier ones were not.
    systems = [r.system for r in model.requests]
    assert not any("Budget:" in s for s in systems[:4])
    assert "about 100 tokens remain" in systems[4]


async def test_approving_continues_the_turn(make_runtime: RuntimeFactory) -> None:
    rt, model, sid = await parked(make_runtime)
    call_id = (await rt.approvals(sid, principal=ALICE))[0].call_id  # type: ignore[attr-defined]
    await rt.resolve_approval(sid, call_id, "approve", principal=ALICE)  # type: ignore[attr-defined]
    await settle(rt)  # type: ignore[arg-type]
    events = await rt.store.read(sid)  # type: ignore[attr-defined]
    done = [e for e in events if e.type == "turn.completed"]
    assert len(done) == 1 and done[0].data["result"] == "all done"
    assert done[0].data["usage"]["inputTokens"] == 480
    assert len(model.requests) == 6
    # The model never sees the budget approval as a tool call of its own.
    last: ModelRequest = model.requests[-1]
    assert all(getattr(m, "tool_name", None) != "budget" for m in last.messages)


async def test_denying_fails_the_turn(make_runtime: RuntimeFactory) -> None:
    rt, model, sid = await parked(make_runtime)
    call_id = (await rt.approvals(sid, principal=ALICE))[0].call_id  # type: ignore[attr-defined]
    await rt.resolve_approval(sid, call_id, "deny", principal=ALICE)  # type: ignore[attr-defined]
    await settle(rt)  # type: ignore[arg-type]
    events = await rt.store.read(sid)  # type: ignore[attr-defined]
    failed = [e for e in events if e.type == "turn.failed"]
    assert len(failed) == 1
    assert failed[0].data["error"] == "budget exceeded: the request to continue was denied"
    assert len(model.requests) == 5


async def test_session_budget_in_dollars_counts_earlier_turns(
    make_runtime: RuntimeFactory,
) -> None:
    # A text turn of 1000 input tokens costs $0.003 at the test price; the session may
    # spend $0.005, so the second turn would pass it and parks before its model call.
    usage = Usage(input_tokens=1000)
    model = ScriptedModel([Step.text("one", usage=usage), Step.text("two", usage=usage)])
    rt = make_runtime(
        {"agent/agent.py": agent_py(prices=PRICES, budget={"session_usd": 0.005})},
        lambda _id: model,
    )
    acc = await rt.start_session("first", principal=ALICE)
    await settle(rt)
    await rt.follow_up(acc.session_id, acc.continuation_token, "second", principal=ALICE)
    await settle(rt)
    assert len(model.requests) == 1
    pending = await rt.approvals(acc.session_id, principal=ALICE)
    assert "this session has used $0.0030" in pending[0].arguments["reason"]


def with_helper_subagent(*, turn_tokens: int) -> dict[str, str]:
    """An agent with a turn budget and a subagent `helper` on a priced model."""
    return {
        "agent/agent.py": agent_py(prices=PRICES, budget={"turn_tokens": turn_tokens}),
        "agent/subagents/helper/agent.py": (
            "from agentkit import define_agent\n"
            "agent = define_agent(description='Helps.', model='anthropic:claude-haiku-4-5')\n"
        ),
        "agent/subagents/helper/instructions.md": "You help.\n",
    }


async def test_a_subagent_cannot_spend_past_the_budget(make_runtime: RuntimeFactory) -> None:
    # The subagent would loop on tools for ever; the shared check stops it, and the
    # parent's next step parks.
    sub = [Step.tool_calls(call("add", {"a": 1, "b": 1}), usage=HUNDRED) for _ in range(50)]
    parent = ScriptedModel(
        [
            Step.tool_calls(
                call("task", {"subagent": "helper", "prompt": "add forever"}), usage=HUNDRED
            ),
            Step.text("never", usage=HUNDRED),
        ]
    )
    child = ScriptedModel(sub, model_id="child")
    files = with_helper_subagent(turn_tokens=500)
    rt = make_runtime(files, lambda mid: child if mid else parent)
    acc = await rt.start_session("go", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    done = next(e.data for e in events if e.type == "subagent.completed")
    assert "budget exceeded" in done["error"]
    assert len(child.requests) <= 5  # 100 from the parent + at most 4 child steps of 100
    assert fold_status(events) == SessionStatus.AWAITING_APPROVAL
    assert len(parent.requests) == 1


def test_bad_budgets_fail_at_definition() -> None:
    from agentkit import define_agent

    with pytest.raises(ValueError, match="unknown budget key"):
        define_agent(budget={"daily": 3})
    with pytest.raises(ValueError, match="positive"):
        define_agent(budget={"turn_usd": -1})


async def test_each_approval_grants_exactly_one_more_budget(make_runtime: RuntimeFactory) -> None:
    model = ScriptedModel(add_steps(12))
    rt = make_runtime(
        {"agent/agent.py": agent_py(prices=PRICES, budget={"turn_tokens": 500})},
        lambda _id: model,
    )
    acc = await rt.start_session("count", principal=ALICE)
    await settle(rt)
    sid = acc.session_id
    assert len(model.requests) == 5
    first = (await rt.approvals(sid, principal=ALICE))[0].call_id
    await rt.resolve_approval(sid, first, "approve", principal=ALICE)
    await settle(rt)
    # Approved once: 1000 tokens in all, so steps 6-10 run and the 11th parks again.
    assert len(model.requests) == 10
    pending = await rt.approvals(sid, principal=ALICE)
    assert [p.tool_name for p in pending] == ["budget"] and pending[0].call_id != first
    assert "used 1000 tokens of 1000 tokens" in pending[0].arguments["reason"]


async def test_an_unanswered_budget_approval_ends_the_turn_as_failed(
    make_runtime: RuntimeFactory,
) -> None:

    model = ScriptedModel(add_steps(5))
    budget = {"turn_tokens": 500, "approval_timeout_s": 3600}
    rt = make_runtime({"agent/agent.py": agent_py(prices=PRICES, budget=budget)}, lambda _: model)
    acc = await rt.start_session("count", principal=ALICE)
    await settle(rt)
    sid = acc.session_id
    [pending] = await rt.approvals(sid, principal=ALICE)
    asked = datetime.fromisoformat(pending.requested_at).timestamp()

    rt.clock = lambda: asked + 3599  # not yet: the question still stands
    assert await rt.sweep() == 0
    assert fold_status(await rt.store.read(sid)) == SessionStatus.AWAITING_APPROVAL

    rt.clock = lambda: asked + 3600
    assert await rt.sweep() == 1
    await settle(rt)
    events = await rt.store.read(sid)
    [resolved] = [e for e in events if e.type == "action.approval_resolved"]
    assert resolved.data["decision"] == "deny"
    assert resolved.data["principal"] == "agentkit:budget-timeout"
    [failed] = [e for e in events if e.type == "turn.failed"]
    assert failed.data["error"] == (
        "budget exceeded: the request to continue was not answered in time"
    )
    assert len(model.requests) == 5  # nothing more was spent
    assert await rt.sweep() == 0  # and nothing is left to expire


async def test_a_user_tool_named_budget_is_never_expired_as_a_budget_question(
    make_runtime: RuntimeFactory,
) -> None:

    tool = """
from pydantic import BaseModel
from agentkit import define_tool

class BudgetInput(BaseModel):
    team: str

@define_tool(description="Raise a team's budget.", needs_approval=True)
async def budget(input: BudgetInput, ctx) -> str:
    return "raised"
"""
    model = ScriptedModel([Step.tool_calls(call("budget", {"team": "ops"})), Step.text("ok")])
    files = {
        "agent/agent.py": agent_py(budget={"turn_tokens": 500, "approval_timeout_s": 60}),
        "agent/tools/budget.py": tool,
    }
    rt = make_runtime(files, lambda _: model)
    acc = await rt.start_session("raise it", principal=ALICE)
    await settle(rt)
    [pending] = await rt.approvals(acc.session_id, principal=ALICE)
    assert pending.tool_name == "budget"
    asked = datetime.fromisoformat(pending.requested_at).timestamp()
    rt.clock = lambda: asked + 3600  # long past the budget question's timeout
    assert await rt.sweep() == 0  # a person still has to answer the tool's approval
    events = await rt.store.read(acc.session_id)
    assert fold_status(events) == SessionStatus.AWAITING_APPROVAL
    await rt.resolve_approval(acc.session_id, pending.call_id, "approve", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    [result] = [e.data for e in events if e.type == "action.result"]
    assert result["result"] == "raised"  # run as the tool, not read as a budget answer


async def test_budget_approvals_wait_a_day_by_default(make_runtime: RuntimeFactory) -> None:

    rt, _model, sid = await parked(make_runtime)
    [pending] = await rt.approvals(sid, principal=ALICE)  # type: ignore[attr-defined]
    asked = datetime.fromisoformat(pending.requested_at).timestamp()
    rt.clock = lambda: asked + 23 * 3600  # type: ignore[attr-defined]
    assert await rt.sweep() == 0  # type: ignore[arg-type]
    rt.clock = lambda: asked + 24 * 3600  # type: ignore[attr-defined]
    assert await rt.sweep() == 1  # type: ignore[arg-type]
    await settle(rt)  # type: ignore[arg-type]
    events = await rt.store.read(sid)  # type: ignore[attr-defined]
    assert fold_status(events) != SessionStatus.AWAITING_APPROVAL
    assert any(e.type == "turn.failed" for e in events)


async def test_parallel_subagents_share_one_budget(make_runtime: RuntimeFactory) -> None:
    # Two subagents started in one step run at once. Each sees what the other has spent:
    # together they stop at the turn's budget, not at a budget each.
    sub = [Step.tool_calls(call("add", {"a": 1, "b": 1}), usage=HUNDRED) for _ in range(50)]
    task = {"subagent": "helper", "prompt": "add forever"}
    parent = ScriptedModel(
        [
            Step.tool_calls(call("task", task), call("task", task), usage=HUNDRED),
            Step.text("never", usage=HUNDRED),
        ]
    )
    child = ScriptedModel(sub, model_id="child")
    files = with_helper_subagent(turn_tokens=1000)
    rt = make_runtime(files, lambda mid: child if mid else parent)
    acc = await rt.start_session("go", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    done = [e.data for e in events if e.type == "subagent.completed"]
    assert len(done) == 2 and all("budget exceeded" in d["error"] for d in done)
    # 100 from the parent leaves 900: nine child steps in all, plus at most one step per
    # subagent that started while the other's last step was still running.
    assert 9 <= len(child.requests) <= 9 + 2, len(child.requests)
    assert fold_status(events) == SessionStatus.AWAITING_APPROVAL
