"""Turns longer than one TurnFunction invocation, driven through the turn handler with its
real event shape, on the DynamoDB store (moto server).

Time is a fake clock the test owns: every model step moves it on by `STEP_SECONDS`, and each
invocation's Lambda context reports the time left from it, so where a turn stops is
decided by the clock, never by how fast the machine is.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentkit.aws.handlers import _common, api, turn
from agentkit.aws.host import AwsHost
from agentkit.models.base import ModelRequest
from agentkit.models.scripted import Step, call
from agentkit.project.build import build_project
from agentkit.project.bundle import AgentBundle
from tests.aws.conftest import FakeContext, Stack, load_event

STEP_SECONDS = 100.0
MAX_TURN_SECONDS = 1800

LONG_AGENT_FILES = {
    "agent/agent.py": f"""
        from agentkit import define_agent

        agent = define_agent(model="test", max_turn_seconds={MAX_TURN_SECONDS})
    """,
    "agent/tools/tick.py": """
        import os

        from pydantic import BaseModel

        from agentkit import ToolContext, define_tool


        class TickInput(BaseModel):
            n: int


        @define_tool(description="Count one.")
        async def tick(input: TickInput, ctx: ToolContext) -> dict:
            with open(os.environ["AGENTKIT_TEST_TOOL_LOG"], "a", encoding="utf-8") as f:
                f.write(f"tick {input.n}\\n")
            return {"n": input.n}
    """,
    "agent/tools/slow_job.py": """
        import os

        from pydantic import BaseModel

        from agentkit import ToolContext, define_tool


        class JobInput(BaseModel):
            name: str


        @define_tool(description="A job that may take five minutes.", timeout=300)
        async def slow_job(input: JobInput, ctx: ToolContext) -> dict:
            with open(os.environ["AGENTKIT_TEST_TOOL_LOG"], "a", encoding="utf-8") as f:
                f.write(f"slow {input.name}\\n")
            return {"done": input.name}
    """,
}


class Clock:
    """The fake time of the test, in seconds."""

    def __init__(self) -> None:
        self.now = 0.0


@dataclass
class ClockContext(FakeContext):
    """A Lambda context whose invocation ends `budget` fake seconds after it began."""

    clock: Clock = dataclasses.field(default_factory=Clock)
    budget: float = 900.0
    began: float = 0.0

    def __post_init__(self) -> None:
        self.began = self.clock.now

    def get_remaining_time_in_millis(self) -> int:
        return int((self.began + self.budget - self.clock.now) * 1000)


@dataclass
class LongStack:
    stack: Stack
    clock: Clock
    tool_log: Path

    def ticking(self, step: Step, seconds: float = STEP_SECONDS) -> Step:
        """`step`, taking `seconds` of fake time."""
        clock = self.clock

        def respond(_request: ModelRequest) -> Step:
            clock.now += seconds
            return step

        return Step(responder=respond)

    def script(self, *steps: Step) -> None:
        self.stack.model._steps.extend(steps)

    def create(self, message: str = "Work through it.") -> str:
        event = load_event("api/create-session.json")
        event["body"] = json.dumps({"message": message})
        response = api.handler(event, FakeContext())
        assert response["statusCode"] == 200, response
        return str(json.loads(response["body"])["sessionId"])

    def invoke_all(self, budget: float | None) -> int:
        """Hand every dispatched turn to TurnFunction's handler, as Lambda's async invoke
        does (with `budget` fake seconds per invocation; None: the real 900 s, no clock)."""
        count = 0
        while self.stack.dispatcher.payloads:
            payload = self.stack.dispatcher.payloads.pop(0)
            assert set(payload) == set(load_event("turn/run-turn.json"))
            context = FakeContext() if budget is None else ClockContext(clock=self.clock)
            if isinstance(context, ClockContext) and budget is not None:
                context.budget = budget
            assert turn.handler(payload, context)["ok"] is True
            count += 1
            assert count < 50, "the turn keeps continuing"
        return count

    def events(self, session_id: str) -> list[dict[str, Any]]:
        """The session's events as a client reading the stream gets them."""
        event = load_event("api/stream.json")
        path = f"/v1/session/{session_id}/events"
        event["rawPath"] = path
        event["requestContext"]["http"]["path"] = path
        event["rawQueryString"] = "startIndex=0"
        event["queryStringParameters"] = {"startIndex": "0"}
        response = api.handler(event, FakeContext())
        assert response["statusCode"] == 200, response
        return [json.loads(line) for line in response["body"].splitlines() if line]

    def status(self, session_id: str) -> str:
        """The session's status as `GET /v1/sessions` folds it for a client."""
        event = load_event("api/stream.json")
        event["rawPath"] = "/v1/sessions"
        event["requestContext"]["http"]["path"] = "/v1/sessions"
        event["rawQueryString"] = "limit=50"
        event["queryStringParameters"] = {"limit": "50"}
        response = api.handler(event, FakeContext())
        assert response["statusCode"] == 200, response
        (found,) = [
            s for s in json.loads(response["body"])["sessions"] if s["sessionId"] == session_id
        ]
        return str(found["status"])

    def tool_calls(self) -> list[str]:
        if not self.tool_log.exists():
            return []
        return self.tool_log.read_text(encoding="utf-8").splitlines()


@pytest.fixture
def long_stack(
    aws_stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LongStack]:
    project = tmp_path / "project"
    for rel, text in LONG_AGENT_FILES.items():
        (project / rel).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    build_dir = tmp_path / "build-long"
    build_project(project, build_dir)
    settings = dataclasses.replace(aws_stack.settings, build_dir=build_dir)
    model = aws_stack.model
    host = AwsHost(
        settings,
        bundle=AgentBundle.load_built(build_dir),
        clients=aws_stack.client,
        dispatcher=aws_stack.dispatcher,
        runtime_options={"model_resolver": lambda _id: model, "lease_ttl": 30.0},
    )
    assert host.settings.turn_margin == 120.0  # the default margin
    _common.use_host(host)
    api.reset()
    tool_log = tmp_path / "tools.log"
    monkeypatch.setenv("AGENTKIT_TEST_TOOL_LOG", str(tool_log))
    yield LongStack(dataclasses.replace(aws_stack, host=host), Clock(), tool_log)


def comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events without what differs between two runs of the same turn: ids and timing."""
    out = []
    for e in events:
        # agent.bound's URLs name the session.
        differ = {"durationMs", "url", "urls"} if e["type"] == "agent.bound" else {"durationMs"}
        data = {k: v for k, v in e["data"].items() if k not in differ}
        out.append({"type": e["type"], "index": e["index"], "data": data})
    return out


def five_steps(ls: LongStack) -> list[Step]:
    return [
        *(ls.ticking(Step.tool_calls(call("tick", {"n": n}, id=f"call_{n}"))) for n in range(4)),
        ls.ticking(Step.text("Counted to four.")),
    ]


def test_a_five_step_turn_spans_invocations_with_the_events_of_one(long_stack: LongStack) -> None:
    ls = long_stack
    ls.script(*five_steps(ls))
    continued = ls.create()
    # 250 s per invocation, 100 s per step, 120 s margin: two steps fit in each.
    assert ls.invoke_all(budget=250) == 3
    assert ls.tool_calls() == [f"tick {n}" for n in range(4)]

    ls.script(*five_steps(ls))
    in_one_go = ls.create()
    assert ls.invoke_all(budget=None) == 1
    assert ls.tool_calls()[4:] == [f"tick {n}" for n in range(4)]

    spanned = ls.events(continued)
    whole = ls.events(in_one_go)
    assert comparable(spanned) == comparable(whole)
    types = [e["type"] for e in spanned]
    assert [e["index"] for e in spanned] == list(range(len(spanned)))
    assert types.count("turn.started") == 1
    assert types.count("step.started") == 5
    assert types[-2:] == ["turn.completed", "session.waiting"]
    assert len({e["turnId"] for e in spanned if e.get("turnId")}) == 1
    # nothing is left for a later invocation: a redelivered payload does nothing
    turn_id = spanned[-1]["turnId"]
    ls.stack.dispatcher.payloads.append({"sessionId": continued, "turnId": turn_id})
    assert ls.invoke_all(budget=250) == 1
    assert len(ls.events(continued)) == len(spanned)


def test_a_tool_that_cannot_finish_in_time_is_deferred_and_run_once(
    long_stack: LongStack,
) -> None:
    ls = long_stack
    steps = [
        ls.ticking(Step.tool_calls(call("slow_job", {"name": "build"}, id="call_slow"))),
        ls.ticking(Step.text("Built.")),
    ]
    ls.script(*steps)
    deferred = ls.create()
    first = ls.stack.dispatcher.payloads[0]
    # 350 s per invocation: after the 100 s step, 250 s are left, less than the 300 s the
    # tool declares; a fresh invocation has room for it.
    ls.stack.dispatcher.payloads.pop(0)
    assert turn.handler(first, ClockContext(clock=ls.clock, budget=350))["ok"] is True
    assert ls.tool_calls() == []  # not started in the invocation it could not finish in
    middle = [e["type"] for e in ls.events(deferred)]
    assert middle[-1] == "actions.requested"
    assert "turn.failed" not in middle and "action.result" not in middle
    assert ls.status(deferred) == "running"  # between invocations the turn is still on
    # Lambda delivers the continuation twice: the call still runs once.
    again = ls.stack.dispatcher.payloads[0]
    ls.stack.dispatcher.payloads.append(dict(again))
    assert ls.invoke_all(budget=350) == 2
    assert ls.tool_calls() == ["slow build"]
    assert ls.status(deferred) == "idle"

    ls.script(
        ls.ticking(Step.tool_calls(call("slow_job", {"name": "build"}, id="call_slow"))),
        ls.ticking(Step.text("Built.")),
    )
    in_one_go = ls.create()
    assert ls.invoke_all(budget=None) == 1
    assert comparable(ls.events(deferred)) == comparable(ls.events(in_one_go))


def test_a_tool_that_never_fits_ends_the_turn_without_running(long_stack: LongStack) -> None:
    ls = long_stack
    ls.script(ls.ticking(Step.tool_calls(call("slow_job", {"name": "x"}, id="call_x"))))
    session_id = ls.create()
    # a fresh invocation with 250 s cannot hold a 300 s tool: fail clearly, never loop
    assert ls.invoke_all(budget=250) == 2
    assert ls.tool_calls() == []
    events = ls.events(session_id)
    types = [e["type"] for e in events]
    assert types[-3:] == ["action.result", "turn.failed", "session.waiting"]
    assert events[-3]["data"]["isError"] is True
    assert "cannot continue" in events[-2]["data"]["error"]
    assert "AGENTKIT_TURN_MARGIN" in events[-2]["data"]["error"]


def test_the_overall_limit_ends_a_turn_that_keeps_continuing(long_stack: LongStack) -> None:
    ls = long_stack
    start = time.time()
    ls.stack.host.runtime.clock = lambda: start + ls.clock.now
    ls.script(
        *(
            ls.ticking(Step.tool_calls(call("tick", {"n": n}, id=f"call_{n}")), seconds=400)
            for n in range(10)
        )
    )
    session_id = ls.create()
    # two 400 s steps per 650 s invocation; the sixth step would start 2000 s in
    assert ls.invoke_all(budget=650) == 3
    assert ls.tool_calls() == [f"tick {n}" for n in range(5)]
    events = ls.events(session_id)
    assert [e["type"] for e in events][-2:] == ["turn.failed", "session.waiting"]
    error = events[-2]["data"]["error"]
    assert f"max_turn_seconds ({MAX_TURN_SECONDS} s)" in error
    assert "define_agent(max_turn_seconds=...)" in error
    assert [e["index"] for e in events] == list(range(len(events)))
