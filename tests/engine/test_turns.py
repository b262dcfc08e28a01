"""One turn per path, driven by the scripted model; event order and payloads checked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agentkit.events import (
    ActionResult,
    ActionsRequested,
    MessageCompleted,
    StepCompleted,
    SubagentCompleted,
    TurnCompleted,
    TurnFailed,
    Usage,
)
from agentkit.models.base import ModelChunk, ModelRequest, ToolResultMessage, UserMessage
from agentkit.models.scripted import ScriptedModel, Step, call, delay, text

from .conftest import ALICE, Env, check_vocabulary, settle, turn_events, types


@pytest.mark.smoke
async def test_text_only_turn_records_the_reply_and_waits(env: Env) -> None:
    rt = env.runtime([Step.text("Hello", ", world", reasoning="Think first.")])
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    assert types(events)[:2] == ["session.started", "message.received"]
    assert turn_events(events, acc.turn_id) == [
        "message.received",
        "turn.started",
        "step.started",
        "reasoning.appended",
        "reasoning.completed",
        "message.appended",
        "message.completed",
        "step.completed",
        "turn.completed",
        "session.waiting",
    ]
    done = events[-2].as_(TurnCompleted)
    assert done.result == "Hello, world"
    assert events[-1].type == "session.waiting"


@pytest.mark.smoke
async def test_one_tool_call_then_answer(env: Env) -> None:
    model = ScriptedModel(
        [Step.tool_calls(call("get_weather", {"city": "Paris"})), Step.text("Sunny in Paris.")]
    )
    rt = env.runtime(model)
    acc = await rt.start_session("weather?", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    assert turn_events(events, acc.turn_id) == [
        "message.received",
        "turn.started",
        "step.started",
        "actions.requested",
        "action.result",
        "step.completed",
        "step.started",
        "message.appended",
        "message.completed",
        "step.completed",
        "turn.completed",
        "session.waiting",
    ]
    result = next(e for e in events if e.type == "action.result").as_(ActionResult)
    assert not result.is_error
    assert result.result == {"city": "Paris", "tempC": 21, "session": acc.session_id}
    # the second step saw the tool result, folded from the events
    second = model.requests[1]
    assert isinstance(second.messages[0], UserMessage)
    tool_msg = second.messages[-1]
    assert isinstance(tool_msg, ToolResultMessage) and '"tempC": 21' in tool_msg.content
    assert {t.name for t in second.tools} >= {"get_weather", "load_skill", "task"}


async def test_parallel_tool_calls_run_concurrently(env: Env) -> None:
    model = ScriptedModel(
        [
            Step.tool_calls(
                call("add", {"a": 1, "b": 2}, id="c1"),
                call("get_weather", {"city": "Oslo"}, id="c2"),
            ),
            Step.text("3 and cold."),
        ]
    )
    rt = env.runtime(model)
    acc = await rt.start_session("both", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    requested = next(e for e in events if e.type == "actions.requested").as_(ActionsRequested)
    assert [a.call_id for a in requested.actions] == ["c1", "c2"]
    results = {e.data["callId"]: e.as_(ActionResult) for e in events if e.type == "action.result"}
    assert results["c1"].result == 3
    assert results["c2"].result["city"] == "Oslo"
    step1_done = next(e for e in events if e.type == "step.completed")
    assert all(e.index < step1_done.index for e in events if e.type == "action.result")


async def test_invalid_arguments_become_an_error_the_model_corrects(env: Env) -> None:
    def corrected(request: ModelRequest) -> Step:
        last = request.messages[-1]
        assert isinstance(last, ToolResultMessage) and last.is_error
        assert "city" in last.content
        return Step.tool_calls(call("get_weather", {"city": "Rome"}))

    model = ScriptedModel(
        [
            Step.tool_calls(call("get_weather", {"town": "Rome"})),
            Step.respond(corrected),
            Step.text("Rome is warm."),
        ]
    )
    rt = env.runtime(model)
    acc = await rt.start_session("rome", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    results = [e.as_(ActionResult) for e in events if e.type == "action.result"]
    assert results[0].is_error and "invalid tool input" in (results[0].error or "")
    assert not results[1].is_error and results[1].result["city"] == "Rome"
    assert events[-2].as_(TurnCompleted).result == "Rome is warm."


async def test_an_unknown_argument_key_is_a_tool_error_naming_it(env: Env) -> None:
    # Dropped silently, `cty` would have left the model believing its call was understood.
    def corrected(request: ModelRequest) -> Step:
        last = request.messages[-1]
        assert isinstance(last, ToolResultMessage) and last.is_error
        assert "unknown key cty (did you mean city?)" in last.content
        return Step.tool_calls(call("get_weather", {"city": "Rome"}))

    model = ScriptedModel(
        [
            Step.tool_calls(call("get_weather", {"city": "Rome", "cty": "Roma"})),
            Step.respond(corrected),
            Step.text("Rome is warm."),
        ]
    )
    rt = env.runtime(model)
    acc = await rt.start_session("rome", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    results = [e.as_(ActionResult) for e in events if e.type == "action.result"]
    assert results[0].is_error
    assert results[0].error == (
        "invalid tool input: unknown key cty (did you mean city?); the tool takes city"
    )
    assert not results[1].is_error and results[1].result["city"] == "Rome"


async def test_tool_exception_becomes_an_error_result(env: Env) -> None:
    rt = env.runtime([Step.tool_calls(call("boom", {"reason": "test"})), Step.text("It failed.")])
    acc = await rt.start_session("go", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    result = next(e for e in events if e.type == "action.result").as_(ActionResult)
    assert result.is_error
    assert result.error == "RuntimeError: kaboom: test"
    assert events[-2].type == "turn.completed"


async def test_unknown_tool_is_an_error_result_listing_the_tools(env: Env) -> None:
    rt = env.runtime([Step.tool_calls(call("nope", {})), Step.text("ok")])
    acc = await rt.start_session("go", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    result = next(e for e in events if e.type == "action.result").as_(ActionResult)
    assert result.is_error and "unknown tool 'nope'" in (result.error or "")
    assert "get_weather" in (result.error or "")


async def test_subagent_result_and_usage_count_into_the_turn(env: Env) -> None:
    child = ScriptedModel(
        [
            Step.tool_calls(
                call("get_weather", {"city": "Lima"}), usage=Usage(input_tokens=5, output_tokens=1)
            ),
            Step.text("Lima: 21C", usage=Usage(input_tokens=7, output_tokens=2)),
        ]
    )
    parent = ScriptedModel(
        [
            Step.tool_calls(
                call("task", {"subagent": "researcher", "prompt": "Weather in Lima?"}),
                usage=Usage(input_tokens=10, output_tokens=3),
            ),
            Step.text("Lima is mild.", usage=Usage(input_tokens=20, output_tokens=4)),
        ]
    )
    # The subagent inherits the parent's model: play its steps in between the parent's.
    model = ScriptedModel([parent._steps[0], child._steps[0], child._steps[1], parent._steps[1]])
    rt = env.runtime(model)
    acc = await rt.start_session("lima", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    order = turn_events(events, acc.turn_id)
    assert order[order.index("actions.requested") :][:4] == [
        "actions.requested",
        "subagent.called",
        "subagent.completed",
        "action.result",
    ]
    sub = next(e for e in events if e.type == "subagent.completed").as_(SubagentCompleted)
    assert sub.result == "Lima: 21C"
    assert sub.usage == Usage(input_tokens=12, output_tokens=3)
    result = next(e for e in events if e.type == "action.result").as_(ActionResult)
    assert result.result == "Lima: 21C"
    # the subagent saw its own instructions, only the prompt, and no task tool
    child_request = model.requests[1]
    assert child_request.system == "You research cities.\n"
    assert child_request.messages == [UserMessage("Weather in Lima?")]
    assert "task" not in {t.name for t in child_request.tools}
    done = events[-2].as_(TurnCompleted)
    assert done.usage == Usage(input_tokens=42, output_tokens=10)


async def test_usage_totals_equal_the_sum_of_steps(env: Env) -> None:
    rt = env.runtime(
        [
            Step.tool_calls(
                call("add", {"a": 1, "b": 1}),
                usage=Usage(input_tokens=3, output_tokens=2, cache_read_tokens=1),
            ),
            Step.tool_calls(
                call("add", {"a": 2, "b": 2}),
                usage=Usage(input_tokens=5, output_tokens=1, cache_write_tokens=4),
            ),
            Step.text("done", usage=Usage(input_tokens=7, output_tokens=6)),
        ]
    )
    acc = await rt.start_session("sum", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    steps = [e.as_(StepCompleted) for e in events if e.type == "step.completed"]
    total = Usage()
    for s in steps:
        assert s.usage is not None
        total = total + s.usage
    assert total == Usage(
        input_tokens=15, output_tokens=9, cache_read_tokens=1, cache_write_tokens=4
    )
    assert events[-2].as_(TurnCompleted).usage == total


async def test_max_steps_ends_the_turn_with_a_clear_error(env: Env) -> None:
    rt = env.runtime([Step.tool_calls(call("add", {"a": 1, "b": 1})) for _ in range(5)])
    acc = await rt.start_session("loop", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    failed = events[-2].as_(TurnFailed)
    assert "max_steps (4)" in failed.error
    assert sum(1 for e in events if e.type == "step.started") == 4
    assert events[-1].type == "session.waiting"


async def test_provider_error_fails_the_turn_with_its_message(env: Env) -> None:
    rt = env.runtime(
        [Step.error("anthropic: invalid x-api-key; set ANTHROPIC_API_KEY", status=401)]
    )
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    assert turn_events(events, acc.turn_id)[-3:] == [
        "step.started",
        "turn.failed",
        "session.waiting",
    ]
    assert events[-2].as_(TurnFailed).error == "anthropic: invalid x-api-key; set ANTHROPIC_API_KEY"


async def test_task_session_ends_completed_or_failed(env: Env) -> None:
    rt = env.runtime([Step.text("report"), Step.error("quota exceeded")])
    ok = await rt.start_session("run", principal=ALICE, mode="task")
    await settle(rt)
    bad = await rt.start_session("run", principal=ALICE, mode="task")
    await settle(rt)
    ok_events = await rt.store.read(ok.session_id)
    bad_events = await rt.store.read(bad.session_id)
    assert ok_events[-1].type == "session.completed" and ok_events[-1].data["result"] == "report"
    assert (
        bad_events[-1].type == "session.failed" and bad_events[-1].data["error"] == "quota exceeded"
    )


async def test_interrupt_mid_stream_fails_the_turn(env: Env) -> None:
    gate = asyncio.Event()

    def streaming(request: ModelRequest) -> list:
        gate.set()
        return [*text("partial "), delay(30), *text("never")]

    rt = env.runtime([Step.respond(streaming)])
    acc = await rt.start_session("long", principal=ALICE)
    await gate.wait()
    assert await rt.stop(acc.session_id, principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    failed = events[-2].as_(TurnFailed)
    assert failed.error == "turn interrupted"
    assert events[-1].type == "session.waiting"
    assert not any(e.type == "message.completed" for e in events)
    assert not await rt.stop(acc.session_id, principal=ALICE)


async def test_long_replies_are_coalesced(env: Env) -> None:
    deltas = ["x" * 8] * 200  # 1600 characters in 200 deltas
    rt = env.runtime([Step.text(*deltas)])
    acc = await rt.start_session("long", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    appended = [e for e in events if e.type == "message.appended"]
    assert 1 < len(appended) <= 8
    assert "".join(e.data["text"] for e in appended) == "x" * 1600
    assert (
        next(e for e in events if e.type == "message.completed").as_(MessageCompleted).text
        == "x" * 1600
    )


async def test_skills_ride_as_descriptions_and_load_on_demand(env: Env) -> None:
    model = ScriptedModel(
        [Step.tool_calls(call("load_skill", {"name": "checklist"})), Step.text("ok")]
    )
    rt = env.runtime(model)
    acc = await rt.start_session("release", principal=ALICE)
    await settle(rt)
    system = model.requests[0].system
    assert "checklist: Use when a release needs the checklist." in system
    assert "1. Check the weather." not in system
    events = await rt.store.read(acc.session_id)
    result = next(e for e in events if e.type == "action.result").as_(ActionResult)
    assert "1. Check the weather." in result.result["markdown"]
    assert result.result["files"] == []


class StartedTools:
    """A fanout that opens a gate when a step's tool calls are recorded."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    def publish(self, session: object, events: list) -> None:
        if any(e.type == "actions.requested" for e in events):
            self.gate.set()


async def test_a_stop_while_tools_run_ends_the_turn_before_the_next_step(env: Env) -> None:
    tools = StartedTools()
    model = ScriptedModel([Step.tool_calls(call("nap", {"seconds": 0.2})), Step.text("never")])
    rt = env.runtime(model, fanout=tools)
    acc = await rt.start_session("nap", principal=ALICE)
    await tools.gate.wait()
    assert await rt.stop(acc.session_id, principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    result = next(e for e in events if e.type == "action.result").as_(ActionResult)
    assert result.result == "rested"  # a running tool finishes; nothing is cut off mid-call
    assert events[-2].as_(TurnFailed).error == "turn interrupted"
    assert len(model.requests) == 1


async def test_a_stop_while_tools_run_does_not_park_the_approval(env: Env) -> None:
    tools = StartedTools()
    model = ScriptedModel(
        [
            Step.tool_calls(
                call("nap", {"seconds": 0.2}, id="n1"), call("deploy", {"env": "prod"}, id="d1")
            )
        ]
    )
    rt = env.runtime(model, fanout=tools)
    acc = await rt.start_session("nap and deploy", principal=ALICE)
    await tools.gate.wait()
    await rt.stop(acc.session_id, principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    assert not any(e.type == "action.approval_requested" for e in events)
    d1 = next(e for e in events if e.type == "action.result" and e.data["callId"] == "d1")
    assert d1.data["isError"] and d1.data["error"] == "turn interrupted"
    assert [e.type for e in events[-2:]] == ["turn.failed", "session.waiting"]
    assert await rt.approvals(acc.session_id, principal=ALICE) == []


class HeldModel:
    """A scripted model that answers only once the test releases it: a model as slow as
    the test needs, with no clock involved."""

    def __init__(self, steps: list[Step]) -> None:
        self.inner = ScriptedModel(steps)
        self.release = asyncio.Event()

    @property
    def id(self) -> str:
        return self.inner.id

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelChunk]:
        await self.release.wait()
        async for chunk in self.inner.stream(request):
            yield chunk


async def test_a_slow_model_still_shows_the_step_at_once(env: Env) -> None:
    model = HeldModel([Step.text("late")])
    rt = env.runtime(model)
    acc = await rt.start_session("slow", principal=ALICE)
    seen: list[str] = []
    while "step.started" not in seen:
        batch = await rt.store.follow(acc.session_id, len(seen), timeout=60)
        assert batch, "step.started never showed up while the model was silent"
        seen += [e.type for e in batch]
    assert seen[-2:] == ["turn.started", "step.started"]  # the model has said nothing yet
    model.release.set()
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    assert events[-2].type == "turn.completed" and events[-2].data["result"] == "late"
