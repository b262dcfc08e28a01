"""The loop breaker: a turn that repeats one call, or makes no progress, is stopped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.events import ActionResult, TurnFailed
from agentkit.models.base import ModelRequest
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.project.bundle import AgentBundle
from agentkit.store.memory import MemoryStore

from .conftest import ALICE, FILES, settle, write_project


def looping_model() -> ScriptedModel:
    """Calls get_weather for Paris, forever."""

    def again(_request: ModelRequest) -> Step:
        return Step.tool_calls(call("get_weather", {"city": "Paris"}))

    return ScriptedModel([Step.respond(again) for _ in range(50)])


RUNTIMES: list[AgentRuntime] = []


@pytest.fixture(autouse=True)
async def close_dispatchers() -> AsyncIterator[None]:
    yield
    while RUNTIMES:
        d = RUNTIMES.pop().dispatcher
        if isinstance(d, LocalDispatcher):
            await d.close()


def runtime(tmp_path: Path, model: ScriptedModel, options: str) -> AgentRuntime:
    files = dict(FILES)
    files["agent/agent.py"] = (
        f"from agentkit import define_agent\nagent = define_agent(max_steps=40, {options})\n"
    )
    bundle = AgentBundle.discover(write_project(tmp_path / "proj", files))
    assert not bundle.manifest.has_errors, bundle.manifest.diagnostics
    rt = AgentRuntime(
        bundle,
        MemoryStore(),
        model_resolver=lambda _id: model,  # type: ignore[arg-type,return-value]
        state_root=tmp_path / "state",
    )
    RUNTIMES.append(rt)
    return rt


def results(events: list) -> list[ActionResult]:  # type: ignore[type-arg]
    return [e.as_(ActionResult) for e in events if e.type == "action.result"]


@pytest.mark.parametrize("options", ["", "loop_guard='fail'"])
async def test_a_repeated_call_fails_the_turn_at_the_fifth_call(
    tmp_path: Path, options: str
) -> None:
    model = looping_model()
    rt = runtime(tmp_path, model, options)
    acc = await rt.start_session("weather?", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)

    assert len(model.requests) == 5
    done = results(events)
    assert [r.is_error for r in done] == [False, False, False, False, True]
    assert done[-1].error == "loop_detected"  # the fifth call never ran
    failed = next(e for e in events if e.type == "turn.failed").as_(TurnFailed)
    assert failed.error == "loop_detected"
    assert failed.evidence == {
        "reason": "repeated_call",
        "count": 5,
        "toolName": "get_weather",
        "arguments": {"city": "Paris"},
    }


async def test_loop_repeat_sets_how_many_repeats_stop_the_turn(tmp_path: Path) -> None:
    model = looping_model()
    rt = runtime(tmp_path, model, "loop_repeat=3")
    acc = await rt.start_session("weather?", principal=ALICE)
    await settle(rt)
    assert len(model.requests) == 3
    assert (await rt.store.read(acc.session_id))[-2].data["error"] == "loop_detected"


async def test_off_lets_the_turn_run_to_max_steps(tmp_path: Path) -> None:
    model = looping_model()
    rt = runtime(tmp_path, model, "loop_guard='off'")
    acc = await rt.start_session("weather?", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    assert len(model.requests) == 40
    assert "max_steps" in events[-2].data["error"]


async def test_steps_with_nothing_new_stop_the_turn(tmp_path: Path) -> None:
    numbers = iter(range(100))

    def other_sum(_request: ModelRequest) -> Step:  # new arguments, the same result: 0
        n = next(numbers)
        return Step.tool_calls(call("add", {"a": n, "b": -n}))

    model = ScriptedModel([Step.respond(other_sum) for _ in range(50)])
    rt = runtime(tmp_path, model, "loop_idle_steps=3")
    acc = await rt.start_session("go", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    failed = events[-2].as_(TurnFailed)
    assert failed.error == "loop_detected"
    assert failed.evidence == {"reason": "idle_steps", "count": 3}
    # the first step's result was new; three steps repeating it, then the stop
    assert len(model.requests) == 5


async def test_ask_parks_the_turn_on_a_question_and_approving_goes_on(tmp_path: Path) -> None:
    model = looping_model()
    rt = runtime(tmp_path, model, "loop_guard='ask'")
    acc = await rt.start_session("weather?", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    assert len(model.requests) == 5
    question = events[-1]
    assert question.type == "action.approval_requested"
    assert question.data["toolName"] == "loop_guard"
    assert question.data["arguments"]["reason"] == "repeated_call"
    assert results(events)[-1].is_error  # the fifth call did not run

    await rt.resolve_approval(acc.session_id, question.data["callId"], "approve", principal=ALICE)
    await settle(rt)
    # counted afresh: five more calls, then the question again
    assert len(model.requests) == 10
    assert (await rt.store.read(acc.session_id))[-1].type == "action.approval_requested"


async def test_ask_denied_fails_the_turn_with_the_evidence(tmp_path: Path) -> None:
    model = looping_model()
    rt = runtime(tmp_path, model, "loop_guard='ask'")
    acc = await rt.start_session("weather?", principal=ALICE)
    await settle(rt)
    question = (await rt.store.read(acc.session_id))[-1]
    await rt.resolve_approval(acc.session_id, question.data["callId"], "deny", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    failed = next(e for e in events if e.type == "turn.failed").as_(TurnFailed)
    assert failed.error == "loop_detected"
    assert failed.evidence is not None and failed.evidence["reason"] == "repeated_call"
    assert len(model.requests) == 5


@pytest.mark.parametrize(
    ("keyword", "value"),
    [("loop_guard", "'stop'"), ("loop_repeat", "1"), ("loop_idle_steps", "0")],
)
def test_bad_options_are_named_when_the_agent_is_defined(keyword: str, value: str) -> None:
    from agentkit import define_agent

    with pytest.raises(ValueError, match=keyword):
        define_agent(**{keyword: eval(value)})
