"""A model handed to `define_agent` as an object: compiled into the manifest by its id, and
run for real turns by `agentkit serve`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.events import EventType
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal
from agentkit.store.memory import MemoryStore
from tests.fixtures.http_server import SLUG, ServeFactory, write_agent
from tests.server.helpers import read_stream, turn_ends

SCRIPTED_AGENT = """
    from agentkit import define_agent
    from agentkit.models import ScriptedModel, Step
    from agentkit.models.scripted import call

    model = ScriptedModel(
        [
            Step.tool_calls(call("get_weather", {"city": "Oslo"})),
            Step.text("Oslo is 21C and clear."),
        ],
        model_id="mycorp:oslo-weather",
    )
    agent = define_agent(model=model, max_steps=4)
"""

WEATHER_TOOL = """
    from pydantic import BaseModel
    from agentkit import ToolContext, define_tool


    class WeatherInput(BaseModel):
        city: str


    @define_tool(description="Get the current weather for a city.")
    async def get_weather(input: WeatherInput, ctx: ToolContext) -> dict:
        return {"city": input.city, "tempC": 21}
"""


def project(root: Path, agent_py: str) -> Path:
    return write_agent(
        root,
        {
            "agent/agent.py": agent_py,
            "agent/instructions.md": "Answer weather questions.\n",
            "agent/tools/get_weather.py": WEATHER_TOOL,
        },
    )


@pytest.fixture
def agent_project(tmp_path: Path) -> Path:
    return project(tmp_path / SLUG, SCRIPTED_AGENT)


def test_the_manifest_records_a_model_objects_id(agent_project: Path) -> None:
    bundle = AgentBundle.discover(agent_project)
    assert not bundle.manifest.has_errors, bundle.manifest.diagnostics
    assert bundle.manifest.agent.model == "mycorp:oslo-weather"


def test_a_served_turn_runs_on_the_folders_model(serve: ServeFactory) -> None:
    # The fixture pins AGENTKIT_MODEL=test; blank, the agent file's model applies.
    served = serve(env={"AGENTKIT_MODEL": ""})
    with httpx.Client(timeout=30) as http:
        r = http.post(f"{served.url}/v1/session", json={"message": "Weather in Oslo?"})
        assert r.status_code == 200, r.text
        events = read_stream(http, served.url, r.json()["sessionId"], until=turn_ends())
    started = next(e for e in events if e["type"] == "turn.started")
    assert started["data"]["model"] == "mycorp:oslo-weather"
    results = [e["data"] for e in events if e["type"] == "action.result"]
    assert [(d["toolName"], d["result"]) for d in results] == [
        ("get_weather", {"city": "Oslo", "tempC": 21})
    ]
    assert events[-1]["type"] == "turn.completed"
    assert "Oslo is 21C and clear." in str(events[-1]["data"])


@pytest.mark.parametrize(
    ("model_expr", "says"),
    [
        ("object()", "object has no `id` string"),
        ("NoStream()", "NoStream has no `stream(request)` method"),
        ("NoRequest()", "NoRequest.stream must take one argument, the request"),
    ],
)
def test_an_object_that_is_not_a_model_is_a_compile_diagnostic(
    tmp_path: Path, model_expr: str, says: str
) -> None:
    agent_py = f"""
        from agentkit import define_agent


        class NoStream:
            id = "mycorp:half"


        class NoRequest:
            id = "mycorp:half"

            async def stream(self):
                yield None


        agent = define_agent(model={model_expr})
    """
    bundle = AgentBundle.discover(project(tmp_path / SLUG, agent_py))
    found = [d for d in bundle.manifest.diagnostics if d.code == "model.invalid"]
    assert [(d.path, d.severity) for d in found] == [("agent/agent.py", "error")]
    assert "agentkit.models.Model" in found[0].message
    assert says in found[0].message


@pytest.mark.parametrize(("env", "expected"), [("", "mycorp:oslo-weather"), ("test", "test")])
async def test_agentkit_model_still_overrides_a_folder_model(
    agent_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str, expected: str
) -> None:
    monkeypatch.setenv("AGENTKIT_MODEL", env)
    runtime = AgentRuntime(
        AgentBundle.discover(agent_project), MemoryStore(), state_root=tmp_path / "state"
    )
    dispatcher = runtime.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    try:
        accepted = await runtime.start_session("Weather in Oslo?", principal=Principal("me"))
        await dispatcher.drain()
        events = await runtime.store.read(accepted.session_id)
    finally:
        await dispatcher.close()
    started = next(e for e in events if e.type == EventType.TURN_STARTED)
    assert started.data["model"] == expected
