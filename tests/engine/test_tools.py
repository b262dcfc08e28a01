"""Direct tool calls, agent-execution tools, timeouts and approval predicates."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from agentkit import ToolContext, define_tool
from agentkit.authoring.contexts import HostServices
from agentkit.engine.tools.calls import InvalidToolInput, ToolEntry, invoke
from agentkit.errors import BadRequest, Conflict, Forbidden, NotFound
from agentkit.events import ActionResult
from agentkit.models.base import ModelRequest
from agentkit.models.scripted import Step, call, delay, text

from .conftest import ALICE, BOB, Env, check_vocabulary, settle


async def test_direct_call_without_a_session(env: Env) -> None:
    rt = env.runtime([])
    out = await rt.call_tool("add", {"a": 4, "b": 5}, principal=ALICE)
    assert out.result == 9 and not out.is_error
    assert out.call_id.startswith("tool_add_") and out.tool_name == "add"


async def test_direct_call_on_a_session_is_recorded_without_a_turn(env: Env) -> None:
    rt = env.runtime([Step.text("hi")])
    acc = await rt.start_session("hello", principal=ALICE)
    await settle(rt)
    out = await rt.call_tool(
        "get_weather", {"city": "Bern"}, principal=ALICE, session_id=acc.session_id
    )
    assert out.result["session"] == acc.session_id
    events = await rt.store.read(acc.session_id)
    check_vocabulary(events)
    assert [e.type for e in events[-2:]] == ["actions.requested", "action.result"]
    assert all(e.turn_id is None for e in events[-2:])
    assert events[-1].as_(ActionResult).call_id == out.call_id


async def test_direct_call_errors(env: Env) -> None:
    rt = env.runtime([])
    with pytest.raises(NotFound) as missing:
        await rt.call_tool("nope", {}, principal=ALICE)
    assert "add" in missing.value.extra["available"]
    assert "load_skill" not in missing.value.extra["available"]
    with pytest.raises(BadRequest) as agent_tool:
        await rt.call_tool("write_note", {"name": "a", "text": "b"}, principal=ALICE)
    assert agent_tool.value.status == 400
    with pytest.raises(BadRequest) as invalid:
        await rt.call_tool("add", {"a": "x"}, principal=ALICE)
    assert "a:" in (invalid.value.message or "") and "b:" in (invalid.value.message or "")


async def test_direct_call_errors_become_results_not_exceptions(env: Env) -> None:
    rt = env.runtime([])
    out = await rt.call_tool("boom", {}, principal=ALICE)
    assert out.is_error and out.result == "RuntimeError: kaboom: no reason"


async def test_direct_call_is_busy_while_a_turn_runs(env: Env) -> None:
    gate = asyncio.Event()

    def slow(request: ModelRequest) -> list:
        gate.set()
        return [*text("a"), delay(30)]

    rt = env.runtime([Step.respond(slow)])
    acc = await rt.start_session("x", principal=ALICE)
    await gate.wait()
    with pytest.raises(Conflict) as err:
        await rt.call_tool("add", {"a": 1, "b": 1}, principal=ALICE, session_id=acc.session_id)
    assert err.value.code == "session_busy"
    with pytest.raises(Forbidden):
        await rt.call_tool("add", {"a": 1, "b": 1}, principal=BOB, session_id=acc.session_id)
    await rt.stop(acc.session_id, principal=ALICE)
    await settle(rt)


async def test_agent_execution_tool_runs_in_the_session_workspace(env: Env) -> None:
    rt = env.runtime(
        [Step.tool_calls(call("write_note", {"name": "out.txt", "text": "hello"})), Step.text("ok")]
    )
    acc = await rt.start_session("note", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    result = next(e for e in events if e.type == "action.result").as_(ActionResult)
    assert not result.is_error, result.error
    assert result.result == {"wrote": "out.txt", "cwd_has_agents_md": True}
    assert (rt.workspace(acc.session_id) / "out.txt").read_text() == "hello"


class Slow(BaseModel):
    seconds: float


async def test_a_slow_tool_times_out(tmp_path: Path) -> None:
    @define_tool(description="sleeps")
    async def nap(input: Slow, ctx: ToolContext) -> str:
        await asyncio.sleep(input.seconds)
        return "woke"

    entry = ToolEntry("nap", "sleeps", {}, input_model=Slow, definition=nap)
    ctx = ToolContext(None, HostServices(), "c1", "nap", tmp_path)
    _, value = entry.validate({"seconds": 5})
    out = await invoke(entry, value, ctx, timeout=0.05)
    assert out.is_error and out.error == "tool 'nap' timed out after 0.05s"


def test_raw_json_schema_tools_are_validated() -> None:
    entry = ToolEntry(
        "raw",
        "raw",
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    )
    assert entry.validate({"n": 3}) == ({"n": 3}, {"n": 3})
    with pytest.raises(InvalidToolInput, match="'n' is a required property"):
        entry.validate({})


def test_a_failing_approval_predicate_asks_for_approval() -> None:
    from agentkit.project.manifest import ToolSpec

    def broken(value: object) -> bool:
        raise ValueError("bug")

    definition = define_tool(
        lambda i, c: None, description="d", needs_approval=broken, input_schema={}
    )
    spec = ToolSpec(name="t", description="d", input_schema={}, needs_approval="predicate")
    entry = ToolEntry("t", "d", {}, spec=spec, definition=definition)
    assert entry.needs_approval({}) is True


async def test_each_call_gets_its_own_working_folder(tmp_path: Path) -> None:
    from agentkit.engine.tools.calls import CallContext, call_workdir

    @define_tool(description="writes")
    def scribble(input: Slow, ctx: ToolContext) -> str:
        target = ctx.workdir / "scratch.txt"
        target.write_text("x")
        return str(target)

    entry = ToolEntry("scribble", "writes", {}, input_model=Slow, definition=scribble)
    paths = []
    for call_id in ("c1", "../evil"):
        ctx = CallContext(
            None, HostServices(), call_id, "scribble", call_workdir(tmp_path, call_id)
        )
        out = await invoke(entry, Slow(seconds=0), ctx, timeout=5)
        paths.append(Path(out.result))
    assert paths[0].parent == tmp_path / "tool-calls" / "c1"
    assert paths[1].parent.parent == tmp_path / "tool-calls"  # hashed, never climbs out
    assert all(p.read_text() == "x" for p in paths)


AGENT_TOOLS = """
import sys, time
from pydantic import BaseModel
from agentkit import define_tool

class In(BaseModel):
    n: int

@define_tool(description="slow", execution="agent")
def slow(input: In, ctx) -> int:
    time.sleep(input.n)
    return input.n

@define_tool(description="fails", execution="agent")
def fails(input: In, ctx) -> int:
    raise ValueError(f"bad n {input.n}")

@define_tool(description="dies", execution="agent")
def dies(input: In, ctx) -> int:
    print("about to die", file=sys.stderr)
    sys.exit(3)
"""


@pytest.mark.parametrize(
    ("attribute", "arguments", "timeout", "expected"),
    [
        ("slow", {"n": 0}, 10, (False, 0, None)),
        ("slow", {"n": 5}, 0.5, (True, None, "agent tool timed out after 0.5s")),
        ("fails", {"n": 7}, 10, (True, None, "ValueError: bad n 7")),
        ("slow", {"n": "x"}, 10, (True, None, "invalid tool input")),
        ("dies", {"n": 1}, 10, (True, None, "exited with code 3 and no result: about to die")),
    ],
)
async def test_agent_tool_subprocess_outcomes(
    tmp_path: Path, attribute: str, arguments: dict, timeout: float, expected: tuple
) -> None:
    from agentkit.engine.tools.agent_tool import run_agent_tool

    (tmp_path / "agent" / "tools").mkdir(parents=True)
    (tmp_path / "agent" / "tools" / "things.py").write_text(AGENT_TOOLS)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    out = await run_agent_tool(
        "agent.tools.things",
        attribute,
        "agent/tools/things.py",
        arguments,
        workspace=workspace,
        project_root=tmp_path,
        timeout=timeout,
        call_id="c1",
    )
    is_error, result, error = expected
    assert out.is_error is is_error
    assert out.result == result
    if error is None:
        assert out.error is None
    else:
        assert out.error is not None and error in out.error
