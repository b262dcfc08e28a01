"""OpenTelemetry over OTLP/HTTP from a real `agentkit serve`: GenAI spans and their
parentage when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, and nothing at all when it is not.

The collector is a local receiver (tests/server/otlp_receiver.py) decoding what the SDK's
exporter sends; the tests wait on it, never on a clock."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.server.auth import bearer_principal_id
from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, write_agent
from tests.server.helpers import dump, of_type, read_stream, turn_ends
from tests.server.otlp_receiver import Receiver, SpanRecord, run_receiver

pytestmark = pytest.mark.slow(reason="starts agentkit serve with an OTLP receiver")

TOKEN = "tok-otel-test"
SERVER, INTERNAL, CLIENT = 2, 1, 3  # the protobuf span kinds
STATUS_ERROR = 2
INBOUND_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
INBOUND_SPAN = "00f067aa0ba902b7"

# The root agent asks for the weather, a subagent (which asks for the weather too), a probe
# of what this process imported, and a tool that fails; then it answers. "wipe" parks on
# an approval; "slow" runs a job that waits for the test's gate.
AGENT_PY = """
    from agentkit import define_agent
    from agentkit.models.base import UserMessage
    from agentkit.models.scripted import ScriptedModel, Step, call


    def policy(request):
        last = request.messages[-1]
        if not isinstance(last, UserMessage):
            return Step.text("All ", "done.")
        if "research cities" in request.system:
            return Step.tool_calls(call("get_weather", {"city": "Lyon"}))
        if "wipe" in last.text:
            return Step.tool_calls(call("wipe_notes", {"folder": "notes"}))
        if "slow" in last.text:
            return Step.tool_calls(call("slow_job", {"label": "gate"}))
        return Step.tool_calls(
            call("get_weather", {"city": "Paris"}),
            call("task", {"subagent": "researcher", "prompt": "Research Paris"}),
            call("otel_modules", {}),
            call("broken", {}),
        )


    agent = define_agent(model=ScriptedModel([Step.respond(policy)] * 500), max_steps=6)
"""
FILES = {
    "agent/agent.py": AGENT_PY,
    "agent/instructions.md": "You are a helpful desk agent.\n",
    "agent/subagents/researcher/agent.py": """
        from agentkit import define_agent
        agent = define_agent(description="Background research on cities.")
    """,
    "agent/subagents/researcher/instructions.md": "You research cities.\n",
    "agent/tools/get_weather.py": AGENT_FILES["agent/tools/get_weather.py"],
    "agent/tools/otel_modules.py": """
        import sys
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class Empty(BaseModel):
            pass


        @define_tool(description="Which OpenTelemetry packages this process imported.")
        def otel_modules(input: Empty, ctx: ToolContext) -> dict:
            loaded = [m for m in sys.modules if m.startswith("opentelemetry")]
            return {
                "sdk": any(m.startswith("opentelemetry.sdk") for m in loaded),
                "exporter": any(m.startswith("opentelemetry.exporter") for m in loaded),
            }
    """,
    "agent/tools/broken.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class Empty(BaseModel):
            pass


        @define_tool(description="Always fails.")
        async def broken(input: Empty, ctx: ToolContext) -> dict:
            raise RuntimeError("the broken tool broke")
    """,
    "agent/tools/wipe_notes.py": AGENT_FILES["agent/tools/wipe_notes.py"],
    # Unlike the shared slow job, this one ends as soon as the turn is stopped, so a stop
    # is not held up by the running tools' stop grace.
    "agent/tools/slow_job.py": """
        import asyncio
        import os
        from pathlib import Path

        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class SlowInput(BaseModel):
            label: str = "job"


        @define_tool(description="A job that ends when the test opens its gate.")
        async def slow_job(input: SlowInput, ctx: ToolContext) -> dict:
            gate = Path(os.environ["SLOW_JOB_GATES"]) / ctx.session.id
            while not gate.exists() and not ctx.cancelled.is_set():
                await asyncio.sleep(0.02)
            return {"done": input.label}
    """,
}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from run_receiver()


def _serve(tmp_path: Path, otel: dict[str, str], files: dict[str, str] = FILES) -> Served:
    """`agentkit serve` of the agent above, with no OTEL_* of the outer environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(AGENTKIT_MODEL="", **otel)  # the folder's scripted model
    project = write_agent(tmp_path / SLUG, files)
    served = Served(project, tmp_path / "state", ["--bearer-token", TOKEN], env)
    return served.start()


@pytest.fixture
def served_factory(tmp_path: Path) -> Iterator[Any]:
    started: list[Served] = []

    def factory(otel: dict[str, str], files: dict[str, str] = FILES) -> Served:
        served = _serve(tmp_path, otel, files)
        started.append(served)
        return served

    yield factory
    for served in started:
        served.stop()


def _client() -> httpx.Client:
    return httpx.Client(timeout=30, headers={"Authorization": f"Bearer {TOKEN}"})


def _run_turn(
    client: httpx.Client, served: Served, message: str, headers: dict[str, str] | None = None
) -> tuple[str, list[dict[str, Any]]]:
    r = client.post(f"{served.url}/v1/session", json={"message": message}, headers=headers)
    assert r.status_code == 200, r.text
    session_id: str = r.json()["sessionId"]
    events = read_stream(client, served.url, session_id, until=turn_ends())
    return session_id, events


def _otel_env(receiver: Receiver, **extra: str) -> dict[str, str]:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_SERVICE_NAME": "otel-test",
        **extra,
    }


def _named(spans: list[SpanRecord], name: str) -> list[SpanRecord]:
    return [s for s in spans if s.name == name]


def _turn_span(session_id: str, outcome: str) -> Any:
    def ready(spans: list[SpanRecord]) -> bool:
        return any(
            s.attributes.get("gen_ai.conversation.id") == session_id
            and s.attributes.get("agentkit.turn.outcome") == outcome
            and s.name == f"invoke_agent {SLUG}"
            for s in spans
        )

    return ready


def _probe(events: list[dict[str, Any]]) -> dict[str, Any]:
    [result] = [
        e["data"]["result"]
        for e in events
        if e["type"] == "action.result" and e["data"]["toolName"] == "otel_modules"
    ]
    assert isinstance(result, dict)
    return result


def test_a_turn_exports_genai_spans_nested_under_the_server_span(
    receiver: Receiver, served_factory: Any
) -> None:
    served = served_factory(_otel_env(receiver))
    traceparent = f"00-{INBOUND_TRACE}-{INBOUND_SPAN}-01"
    with _client() as client:
        session_id, events = _run_turn(
            client, served, "weather please", headers={"traceparent": traceparent}
        )
    assert events[-1]["type"] == "turn.completed", events[-1]
    assert _probe(events)["sdk"] is True  # the probe itself works: export is on here
    turn_id = events[-1]["turnId"]

    spans = receiver.wait_for(_turn_span(session_id, "completed"))
    # The server span ends with its response; it may come in the same batch or the next.
    spans = receiver.wait_for(lambda got: any(s.kind == SERVER for s in got))
    by_id = {s.span_id: s for s in spans}
    [turn] = [s for s in _named(spans, f"invoke_agent {SLUG}") if s.trace_id == INBOUND_TRACE]
    assert {s.service for s in spans} == {"otel-test"}

    # The inbound traceparent is honoured: the turn's trace is the caller's, under the
    # HTTP server span of the request that started it (the turn ran in a background task).
    ancestors: list[SpanRecord] = []
    parent = by_id.get(turn.parent_id)
    while parent is not None:
        ancestors.append(parent)
        parent = by_id.get(parent.parent_id)
    servers = [a for a in ancestors if a.kind == SERVER]
    assert servers, [a.name for a in ancestors]
    assert servers[-1].parent_id == INBOUND_SPAN
    assert servers[-1].attributes.get("http.request.method") == "POST"

    a = turn.attributes
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == SLUG
    assert a["gen_ai.conversation.id"] == session_id
    assert a["agentkit.turn.id"] == turn_id
    assert a["agentkit.principal"] == bearer_principal_id(TOKEN)
    assert a["gen_ai.request.model"] == "scripted"
    assert a["gen_ai.usage.input_tokens"] > 0 and a["gen_ai.usage.output_tokens"] > 0
    assert turn.status_code != STATUS_ERROR

    children = [s for s in spans if s.parent_id == turn.span_id]
    chats = [s for s in children if s.name == "chat scripted"]
    assert len(chats) == 2  # the step with the calls, then the answer
    assert all(c.kind == CLIENT for c in chats)
    reasons = sorted(c.attributes["gen_ai.response.finish_reasons"][0] for c in chats)
    assert reasons == ["stop", "tool_call"]
    for chat in chats:
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "scripted"
        assert chat.attributes["gen_ai.provider.name"] == "scripted"
        assert chat.attributes["gen_ai.system"] == "scripted"  # the older name, beside it
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert chat.attributes["agentkit.time_to_first_chunk_s"] >= 0
        assert "gen_ai.input.messages" not in chat.attributes  # content is opt-in

    tools = {s.name: s for s in children if s.name.startswith("execute_tool ")}
    assert set(tools) == {
        "execute_tool get_weather",
        "execute_tool task",
        "execute_tool otel_modules",
        "execute_tool broken",
    }
    weather = tools["execute_tool get_weather"]
    assert weather.attributes["gen_ai.tool.name"] == "get_weather"
    calls = {
        a["toolName"]: a["callId"]
        for e in events
        if e["type"] == "actions.requested"
        for a in e["data"]["actions"]
    }
    assert weather.attributes["gen_ai.tool.call.id"] == calls["get_weather"]
    assert "gen_ai.tool.call.arguments" not in weather.attributes
    assert weather.status_code != STATUS_ERROR
    broken = tools["execute_tool broken"]
    assert broken.status_code == STATUS_ERROR
    assert "broke" in broken.status_message

    # The subagent's run nests under its `task` call, with its own model and tool calls.
    [sub] = [s for s in spans if s.parent_id == tools["execute_tool task"].span_id]
    assert sub.name == "invoke_agent researcher"
    assert sub.attributes["gen_ai.conversation.id"] == session_id
    assert sub.attributes["agentkit.turn.outcome"] == "completed"
    inner = sorted(s.name for s in spans if s.parent_id == sub.span_id)
    assert inner == ["chat scripted", "chat scripted", "execute_tool get_weather"]


def test_an_approval_wait_is_an_event_and_an_interrupt_ends_the_turn_with_its_reason(
    receiver: Receiver, served_factory: Any
) -> None:
    served = served_factory(_otel_env(receiver))
    with _client() as client:
        r = client.post(f"{served.url}/v1/session", json={"message": "wipe the notes"})
        parked = r.json()["sessionId"]
        read_stream(client, served.url, parked, until=of_type("action.approval_requested"))
        spans = receiver.wait_for(_turn_span(parked, "awaiting_approval"))
        [turn] = [s for s in spans if s.attributes.get("gen_ai.conversation.id") == parked]
        [(name, attrs)] = turn.events
        assert name == "agentkit.approval.requested"
        assert attrs["gen_ai.tool.name"] == "wipe_notes"

        r = client.post(f"{served.url}/v1/session", json={"message": "run the slow job"})
        slow = r.json()["sessionId"]
        read_stream(client, served.url, slow, until=of_type("actions.requested"))
        stopped = client.post(f"{served.url}/v1/session/{slow}/stop")
        assert stopped.status_code == 200, stopped.text
        read_stream(client, served.url, slow, until=turn_ends())
        [failed] = [e for e in dump(client, served.url, slow) if e["type"] == "turn.failed"]
    error = failed["data"]["error"]
    spans = receiver.wait_for(_turn_span(slow, "interrupted"))
    [turn] = [
        s
        for s in _named(spans, f"invoke_agent {SLUG}")
        if s.attributes["gen_ai.conversation.id"] == slow
    ]
    assert turn.attributes["agentkit.turn.error"] == error


def _ended_span(spans: list[SpanRecord], session_id: str, outcome: str) -> SpanRecord:
    [turn] = [
        s
        for s in _named(spans, f"invoke_agent {SLUG}")
        if s.attributes["gen_ai.conversation.id"] == session_id
        and s.attributes.get("agentkit.turn.outcome") == outcome
    ]
    return turn


def test_a_parked_turn_stopped_from_outside_ends_in_a_span_of_its_own(
    receiver: Receiver, served_factory: Any
) -> None:
    served = served_factory(_otel_env(receiver))
    with _client() as client:
        r = client.post(f"{served.url}/v1/session", json={"message": "wipe the notes"})
        parked = r.json()["sessionId"]
        read_stream(client, served.url, parked, until=of_type("action.approval_requested"))
        receiver.wait_for(_turn_span(parked, "awaiting_approval"))
        stopped = client.post(f"{served.url}/v1/session/{parked}/stop")
        assert stopped.status_code == 200, stopped.text
        [failed] = [e for e in dump(client, served.url, parked) if e["type"] == "turn.failed"]
    spans = receiver.wait_for(_turn_span(parked, "failed"))
    turn = _ended_span(spans, parked, "failed")
    assert turn.attributes["agentkit.turn.id"] == failed["turnId"]
    assert turn.attributes["agentkit.turn.error"] == failed["data"]["error"]
    assert turn.attributes["agentkit.principal"] == bearer_principal_id(TOKEN)


QUEUED_TRACE = "0af7651916cd43dd8448eb211c80319c"
QUEUEING = {
    **FILES,
    "agent/agent.py": AGENT_PY.replace("max_steps=6)", 'max_steps=6, on_busy="queue")'),
}


def test_a_queued_message_starts_its_turn_in_the_trace_of_the_request_that_queued_it(
    receiver: Receiver, served_factory: Any
) -> None:
    served = served_factory(_otel_env(receiver), QUEUEING)
    with _client() as client:
        first = client.post(
            f"{served.url}/v1/session",
            json={"message": "run the slow job"},
            headers={"traceparent": f"00-{INBOUND_TRACE}-{INBOUND_SPAN}-01"},
        ).json()
        session_id = first["sessionId"]
        read_stream(client, served.url, session_id, until=of_type("actions.requested"))
        r = client.post(
            f"{served.url}/v1/session/{session_id}",
            json={"continuationToken": first["continuationToken"], "message": "wipe the notes"},
            headers={"traceparent": f"00-{QUEUED_TRACE}-{INBOUND_SPAN}-01"},
        )
        assert r.status_code == 200, r.text
        queued_turn = r.json()["turnId"]
        [queued] = [
            e for e in dump(client, served.url, session_id) if e["type"] == "message.queued"
        ]
        assert QUEUED_TRACE in queued["data"]["traceContext"]["traceparent"]
        served.open_gate(session_id)  # the first turn ends, and the queued message runs
        read_stream(client, served.url, session_id, until=of_type("action.approval_requested"))
    spans = receiver.wait_for(_turn_span(session_id, "awaiting_approval"))
    turns = {
        s.attributes["agentkit.turn.id"]: s
        for s in _named(spans, f"invoke_agent {SLUG}")
        if s.attributes["gen_ai.conversation.id"] == session_id
    }
    assert turns[first["turnId"]].trace_id == INBOUND_TRACE
    assert turns[queued_turn].trace_id == QUEUED_TRACE  # not the trace of the turn before it


def test_content_is_recorded_only_when_asked_for(receiver: Receiver, served_factory: Any) -> None:
    served = served_factory(
        _otel_env(
            receiver,
            OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true",
            OTEL_SEMCONV_STABILITY_OPT_IN="http,gen_ai_latest_experimental",
        )
    )
    with _client() as client:
        session_id, _ = _run_turn(client, served, "weather please")
    spans = receiver.wait_for(_turn_span(session_id, "completed"))
    [turn] = _named(spans, f"invoke_agent {SLUG}")
    first = next(
        s
        for s in spans
        if s.parent_id == turn.span_id
        and s.attributes.get("gen_ai.response.finish_reasons") == ["tool_call"]
    )
    assert first.attributes["gen_ai.provider.name"] == "scripted"
    assert "gen_ai.system" not in first.attributes  # the latest names only, as opted in
    assert "weather please" in first.attributes["gen_ai.input.messages"]
    assert "Paris" in first.attributes["gen_ai.output.messages"]
    weather = next(
        s for s in spans if s.name == "execute_tool get_weather" and s.parent_id == turn.span_id
    )
    assert "Paris" in weather.attributes["gen_ai.tool.call.arguments"]
    assert "21" in weather.attributes["gen_ai.tool.call.result"]


def test_with_no_otel_variables_nothing_is_exported_or_imported(tmp_path: Path) -> None:
    # A receiver on the default OTLP/HTTP port: where a misconfigured SDK would send.
    try:
        receivers = run_receiver(4318)
        default = next(receivers)
    except OSError:  # the port is taken on this machine: the import check still runs
        receivers, default = None, None
    served = _serve(tmp_path, {})
    try:
        with _client() as client:
            _, events = _run_turn(client, served, "weather please")
        assert events[-1]["type"] == "turn.completed"
        assert _probe(events) == {"sdk": False, "exporter": False}
    finally:
        served.stop()  # a graceful stop: anything batched would be flushed by now
        if receivers is not None:
            assert default is not None
            assert default.requests == 0
            receivers.close()


def test_agentkit_run_exports_its_turn_too(receiver: Receiver, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(AGENTKIT_MODEL="", **_otel_env(receiver))
    project = write_agent(tmp_path / SLUG, FILES)
    cli = "import sys; from agentkit.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", cli, "run", "--dir", str(project), "--json", "weather please"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    spans = receiver.wait_for(lambda got: bool(_named(got, f"invoke_agent {SLUG}")))
    [turn] = _named(spans, f"invoke_agent {SLUG}")
    assert turn.attributes["agentkit.turn.outcome"] == "completed"
    assert turn.parent_id == ""  # no request around it: the trace starts with the turn
    assert turn.attributes["agentkit.principal"] == "local"
    children = {s.name for s in spans if s.parent_id == turn.span_id}
    assert {"chat scripted", "execute_tool get_weather", "execute_tool task"} <= children


def test_model_calls_are_measured_with_the_genai_client_metrics(
    receiver: Receiver, served_factory: Any
) -> None:
    served = served_factory(_otel_env(receiver, OTEL_METRIC_EXPORT_INTERVAL="100"))
    with _client() as client:
        _, events = _run_turn(client, served, "weather please")
    # The root agent's two calls and the subagent's two.
    want = sum(e["data"]["usage"]["inputTokens"] for e in events if e["type"] == "step.completed")

    def tokens(points: list[Any], kind: str) -> list[Any]:
        return [
            p
            for p in points
            if p.metric == "gen_ai.client.token.usage"
            and p.attributes.get("gen_ai.token.type") == kind
        ]

    def ready(points: list[Any]) -> bool:
        durations = [p for p in points if p.metric == "gen_ai.client.operation.duration"]
        return bool(durations) and max(p.count for p in durations) >= 4

    points = receiver.wait_for_points(ready)
    [duration] = [
        p for p in points if p.metric == "gen_ai.client.operation.duration" and p.count >= 4
    ]
    assert duration.attributes["gen_ai.operation.name"] == "chat"
    assert duration.attributes["gen_ai.request.model"] == "scripted"
    assert duration.sum > 0
    latest_input = max(tokens(points, "input"), key=lambda p: p.count)
    assert latest_input.count == 4
    assert latest_input.sum > want > 0  # the turn's own steps, plus the subagent's
    assert max(p.count for p in tokens(points, "output")) == 4


# The same agent with a price for its model, so its turns have a cost.
PRICED = {
    **FILES,
    "agent/agent.py": AGENT_PY.replace(
        "max_steps=6)", 'max_steps=6, prices={"scripted": {"input": 3.0, "output": 15.0}})'
    ),
}


def _latest(points: list[Any], metric: str, **attributes: Any) -> Any:
    """The last exported point of `metric` with these attributes (cumulative), if any."""
    found = [
        p
        for p in points
        if p.metric == metric and all(p.attributes.get(k) == v for k, v in attributes.items())
    ]
    return found[-1] if found else None


def _value_is(metric: str, value: float, **attributes: Any) -> Any:
    def ready(points: list[Any]) -> bool:
        point = _latest(points, metric, **attributes)
        return point is not None and point.value == value

    return ready


def test_turns_tool_errors_and_pending_approvals_are_measured(
    receiver: Receiver, served_factory: Any
) -> None:
    served = served_factory(_otel_env(receiver, OTEL_METRIC_EXPORT_INTERVAL="100"), PRICED)
    with _client() as client:
        _, events = _run_turn(client, served, "weather please")
        [completed] = [e for e in events if e["type"] == "turn.completed"]
        cost = completed["data"]["costUsd"]
        assert cost > 0

        def turn_measured(points: list[Any]) -> bool:
            point = _latest(
                points, "agentkit.turn.duration", **{"agentkit.turn.outcome": "completed"}
            )
            return point is not None and point.count == 1

        points = receiver.wait_for_points(turn_measured)
        completed_turns = {"agentkit.turn.outcome": "completed"}
        duration = _latest(points, "agentkit.turn.duration", **completed_turns)
        assert duration.attributes["agentkit.channel"] == "http"
        assert duration.sum > 0
        priced = _latest(points, "agentkit.turn.cost", **completed_turns)
        assert priced.count == 1 and priced.sum == pytest.approx(cost)
        broken = {"gen_ai.tool.name": "broken", "error.type": "tool_error"}
        receiver.wait_for_points(_value_is("agentkit.tool.errors", 1, **broken))

        # An approval is pending while the turn waits on it, and no longer once decided.
        session_id, _ = _park(client, served)
        receiver.wait_for_points(_value_is("agentkit.approvals.pending", 1))
        [call_id] = [a["callId"] for a in _pending(client, served, session_id)]
        decided = client.post(
            f"{served.url}/v1/session/{session_id}/approvals/{call_id}",
            json={"decision": "approve"},
        )
        assert decided.status_code == 200, decided.text
        read_stream(client, served.url, session_id, until=turn_ends())
        receiver.wait_for_points(_value_is("agentkit.approvals.pending", 0))

        # A stop while parked abandons the approval: it is no longer pending either.
        session_id, _ = _park(client, served)
        receiver.wait_for_points(_value_is("agentkit.approvals.pending", 1))
        stopped = client.post(f"{served.url}/v1/session/{session_id}/stop")
        assert stopped.status_code == 200, stopped.text
        read_stream(client, served.url, session_id, until=of_type("turn.failed"))
    abandoned = {"gen_ai.tool.name": "wipe_notes", "error.type": "abandoned"}
    points = receiver.wait_for_points(_value_is("agentkit.tool.errors", 1, **abandoned))
    assert _latest(points, "agentkit.approvals.pending").value == 0
    failed = _latest(points, "agentkit.turn.cost", **{"agentkit.turn.outcome": "failed"})
    assert failed is not None and failed.count == 1


def _park(client: httpx.Client, served: Served) -> tuple[str, list[dict[str, Any]]]:
    r = client.post(f"{served.url}/v1/session", json={"message": "wipe the notes"})
    assert r.status_code == 200, r.text
    session_id: str = r.json()["sessionId"]
    until = of_type("action.approval_requested")
    return session_id, read_stream(client, served.url, session_id, until=until)


def _pending(client: httpx.Client, served: Served, session_id: str) -> list[dict[str, Any]]:
    r = client.get(f"{served.url}/v1/session/{session_id}/approvals")
    assert r.status_code == 200, r.text
    approvals: list[dict[str, Any]] = r.json()["approvals"]
    return approvals


def test_a_fork_counts_the_approvals_it_waits_on_and_not_its_copied_history(
    receiver: Receiver, served_factory: Any
) -> None:
    served = served_factory(_otel_env(receiver, OTEL_METRIC_EXPORT_INTERVAL="100"), PRICED)
    broken = {"gen_ai.tool.name": "broken", "error.type": "tool_error"}
    with _client() as client:
        done, events = _run_turn(client, served, "weather please")
        receiver.wait_for_points(_value_is("agentkit.tool.errors", 1, **broken))
        fork = client.post(
            f"{served.url}/v1/session/{done}/fork", json={"atIndex": len(events) - 1}
        )
        assert fork.status_code == 200, fork.text

        parked, events = _park(client, served)
        receiver.wait_for_points(_value_is("agentkit.approvals.pending", 1))
        fork = client.post(
            f"{served.url}/v1/session/{parked}/fork", json={"atIndex": events[-1]["index"]}
        )
        assert fork.status_code == 200, fork.text
        [copy] = _pending(client, served, fork.json()["sessionId"])
        assert copy["toolName"] == "wipe_notes"
    points = receiver.wait_for_points(_value_is("agentkit.approvals.pending", 2))
    # The first fork copied a turn with a failed tool call and a cost: neither counts again.
    assert _latest(points, "agentkit.tool.errors", **broken).value == 1
    completed = {"agentkit.turn.outcome": "completed"}
    assert _latest(points, "agentkit.turn.cost", **completed).count == 1
