"""What a subagent may not do, and how each refusal reaches the parent: an approval-gated
tool is never run (no approval can be asked from inside a child), an unknown tool, invalid
input and a failing tool come back to the child as error results, and a child that never
answers stops at max_steps with an error the parent sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.events import ActionResult, SubagentCompleted
from agentkit.models.base import ToolResultMessage
from agentkit.models.scripted import ScriptedModel, Step, call
from tests.engine.conftest import ALICE, FILES, Env, settle, write_project

DEPLOY = """
    import os
    from pathlib import Path
    from pydantic import BaseModel
    from agentkit import define_tool

    class DeployInput(BaseModel):
        env: str

    @define_tool(description="Deploy to an environment.", needs_approval=True)
    def deploy(input: DeployInput, ctx) -> dict:
        with Path(os.environ["AGENTKIT_TEST_DEPLOY_LOG"]).open("a") as log:
            log.write(input.env + "\\n")  # the side effect a guard must prevent
        return {"deployed": input.env}
"""


@pytest.fixture
def deploy_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "deploys.log"
    monkeypatch.setenv("AGENTKIT_TEST_DEPLOY_LOG", str(log))
    return log


@pytest.fixture
def project(tmp_path: Path, deploy_log: Path) -> Path:
    return write_project(tmp_path / "proj", {**FILES, "agent/tools/deploy.py": DEPLOY})


def deployed(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def delegate(*child: Step, final: str = "Done.") -> ScriptedModel:
    """The parent delegates once; the child plays `child`; the parent then answers."""
    task = call("task", {"subagent": "researcher", "prompt": "Do it."}, id="call_task")
    return ScriptedModel([Step.tool_calls(task), *child, Step.text(final)])


def child_results(model: ScriptedModel, request: int) -> list[ToolResultMessage]:
    """The tool results the child saw in its `request`-th request (1 is its first)."""
    messages = model.requests[request].messages
    return [m for m in messages if isinstance(m, ToolResultMessage)]


async def test_a_subagent_cannot_run_a_tool_that_needs_approval(env: Env, deploy_log: Path) -> None:
    model = delegate(
        Step.tool_calls(call("deploy", {"env": "prod"}, id="call_deploy")),
        Step.text("I could not deploy."),
    )
    rt = env.runtime(model)
    acc = await rt.start_session("deploy it", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    types = [e.type for e in events]

    assert deployed(deploy_log) == []  # the tool body never ran
    assert "action.approval_requested" not in types  # and nobody was asked
    (refused,) = child_results(model, 2)
    assert refused.is_error and refused.call_id == "call_deploy"
    assert "needs approval" in refused.content
    assert types.count("turn.completed") == 1


async def test_unknown_tool_invalid_input_and_tool_error_come_back_as_errors(env: Env) -> None:
    model = delegate(
        Step.tool_calls(
            call("no_such_tool", {}, id="c_unknown"),
            call("add", {"a": "one", "b": 2}, id="c_invalid"),
            call("boom", {"reason": "child"}, id="c_boom"),
            call("add", {"a": 1, "b": 2}, id="c_ok"),
        ),
        Step.text("Three failed, one added."),
    )
    rt = env.runtime(model)
    acc = await rt.start_session("try things", principal=ALICE)
    await settle(rt)

    results = {m.call_id: m for m in child_results(model, 2)}
    assert [results[c].is_error for c in ("c_unknown", "c_invalid", "c_boom", "c_ok")] == [
        True,
        True,
        True,
        False,
    ]
    assert "unknown tool 'no_such_tool'" in results["c_unknown"].content
    assert "a" in results["c_invalid"].content and "integer" in results["c_invalid"].content
    assert "kaboom: child" in results["c_boom"].content
    assert results["c_ok"].content == "3"
    events = await rt.store.read(acc.session_id)
    sub = next(e for e in events if e.type == "subagent.completed").as_(SubagentCompleted)
    assert (sub.result, sub.error) == ("Three failed, one added.", None)


async def test_a_subagent_that_never_answers_stops_at_max_steps(env: Env) -> None:
    max_steps = env.bundle.manifest.agent.max_steps
    looping = [Step.tool_calls(call("add", {"a": i, "b": 1})) for i in range(max_steps)]
    model = delegate(*looping, final="The researcher gave up.")
    rt = env.runtime(model)
    acc = await rt.start_session("loop", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)

    sub = next(e for e in events if e.type == "subagent.completed").as_(SubagentCompleted)
    assert sub.result is None
    assert sub.error is not None and f"max_steps ({max_steps})" in sub.error
    result = next(e for e in events if e.type == "action.result").as_(ActionResult)
    assert result.call_id == "call_task" and result.is_error
    assert model.remaining == 0  # the child took exactly max_steps steps, then the parent
    assert len(model.requests) == 1 + max_steps + 1
    assert [e.type for e in events].count("turn.completed") == 1
