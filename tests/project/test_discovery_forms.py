"""Discovery turns every documented path under agent/ (and evals/) into the manifest."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentkit.project.bundle import AgentBundle
from agentkit.project.manifest import Manifest
from tests.fixtures.project_tree import ProjectTree

WEATHER_TOOL = """
    from pydantic import BaseModel, Field
    from agentkit import define_tool

    class WeatherInput(BaseModel):
        city: str = Field(description="City name")

    @define_tool(description="Get the weather.")
    async def get_weather(input: WeatherInput, ctx) -> dict:
        return {"city": input.city, "tempC": 21}
"""


def discover(root: Path) -> Manifest:
    return AgentBundle.discover(root).manifest


def codes(m: Manifest) -> list[str]:
    return [d.code for d in m.diagnostics]


@pytest.mark.smoke
def test_minimal_project_is_clean(project_tree: ProjectTree) -> None:
    m = discover(project_tree())
    assert m.diagnostics == []
    assert m.instructions == "# Test agent\n\nBe brief.\n"


def test_tool_name_comes_from_the_file_name(project_tree: ProjectTree) -> None:
    m = discover(project_tree({"agent/tools/get_weather.py": WEATHER_TOOL}))
    (tool,) = m.tools
    assert tool.name == "get_weather"
    assert tool.description == "Get the weather."
    assert tool.input_schema["properties"]["city"]["description"] == "City name"
    assert tool.ref is not None and tool.ref.module == "agent.tools.get_weather"
    assert tool.ref.path == "agent/tools/get_weather.py"


@pytest.mark.smoke
def test_tool_call_form_raw_schema_approval_and_execution(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/tools/deploy.py": """
                from agentkit import define_tool

                def run(input, ctx):
                    return "ok"

                deploy = define_tool(
                    run,
                    description="Deploy.",
                    input_schema={"type": "object", "properties": {"env": {"type": "string"}}},
                    needs_approval=True,
                )
            """,
            "agent/tools/rm.py": """
                from pydantic import BaseModel
                from agentkit import define_tool

                class RmInput(BaseModel):
                    path: str

                @define_tool(description="Remove.", needs_approval=lambda i: i.path != "/tmp",
                             execution="agent")
                def rm(input: RmInput, ctx):
                    return None
            """,
        }
    )
    m = discover(root)
    assert m.diagnostics == []
    deploy, rm = m.tools
    assert deploy.input_schema["properties"] == {"env": {"type": "string"}}
    assert deploy.needs_approval is True
    assert rm.needs_approval == "predicate"
    assert rm.execution == "agent"


def test_instructions_python_form(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/instructions.py": """
                from agentkit import define_instructions
                TEAM = "ops"
                prompt = define_instructions(f"You help the {TEAM} team.")
            """
        },
        minimal=False,
    )
    assert discover(root).instructions == "You help the ops team."


def test_instructions_python_plain_string(project_tree: ProjectTree) -> None:
    root = project_tree({"agent/instructions.py": "instructions = 'Plain.'\n"}, minimal=False)
    assert discover(root).instructions == "Plain."


def test_instructions_directory_is_composed_in_filename_order(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/instructions/20-rules.md": "Rules.\n",
            "agent/instructions/10-role.md": "Role.\n",
        },
        minimal=False,
    )
    assert discover(root).instructions == "Role.\n\nRules.\n"


def test_skill_flat_markdown_with_description(project_tree: ProjectTree) -> None:
    root = project_tree(
        {"agent/skills/pr-review.md": "---\ndescription: Use when reviewing.\n---\n\n# Steps\n"}
    )
    (skill,) = discover(root).skills
    assert (skill.name, skill.description, skill.markdown) == (
        "pr-review",
        "Use when reviewing.",
        "# Steps\n",
    )


def test_skill_flat_markdown_falls_back_to_first_body_line(project_tree: ProjectTree) -> None:
    root = project_tree({"agent/skills/triage.md": "\n# Triage incoming bugs\n\nSteps.\n"})
    (skill,) = discover(root).skills
    assert skill.description == "Triage incoming bugs"


def test_skill_directory_carries_its_sibling_files(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/skills/sec/SKILL.md": (
                "---\ndescription: Use for auth changes.\n---\nRead refs.\n"
            ),
            "agent/skills/sec/references/keys.md": "# Keys\n",
        }
    )
    (skill,) = discover(root).skills
    assert skill.name == "sec"
    assert skill.files == {"references/keys.md": "# Keys\n"}
    assert skill.source == "agent/skills/sec/SKILL.md"


def test_skill_python_form_with_inline_files(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/skills/research.py": """
                from agentkit import define_skill
                skill = define_skill(description="Research first.", markdown="Gather.",
                                     files={"references/c.md": "- x"})
            """
        }
    )
    (skill,) = discover(root).skills
    assert (skill.name, skill.files) == ("research", {"references/c.md": "- x"})


def test_subagent_with_agent_py_and_instructions_md(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/subagents/researcher/agent.py": """
                from agentkit import define_agent
                agent = define_agent(description="Background research.", model="openai:gpt-4o")
            """,
            "agent/subagents/researcher/instructions.md": "Research well.\n",
        }
    )
    (sub,) = discover(root).subagents
    assert (sub.name, sub.description, sub.model) == (
        "researcher",
        "Background research.",
        "openai:gpt-4o",
    )
    assert sub.instructions == "Research well.\n"


def test_subagent_with_inline_instructions_inherits_model(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/subagents/critic/agent.py": """
                from agentkit import define_agent
                agent = define_agent(description="Critique drafts.", instructions="Be harsh.")
            """
        }
    )
    (sub,) = discover(root).subagents
    assert (sub.model, sub.instructions) == (None, "Be harsh.")


def test_subagent_private_folders_are_warned_and_ignored(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/subagents/critic/agent.py": (
                "from agentkit import define_agent\n"
                "agent = define_agent(description='d', instructions='i')\n"
            ),
            "agent/subagents/critic/tools/x.py": "raise RuntimeError('never imported')\n",
        }
    )
    m = discover(root)
    assert [(d.code, d.severity) for d in m.diagnostics] == [("subagent.ignored_folder", "warning")]
    assert m.tools == [] and len(m.subagents) == 1


def test_mcp_connections_http_and_stdio(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/mcp-connections/linear.py": """
                from agentkit import define_mcp_connection
                linear = define_mcp_connection(url="https://mcp.example.com/mcp",
                                               headers={"Authorization": "Bearer ${TOKEN}"})
            """,
            "agent/mcp-connections/units.py": """
                from agentkit import define_mcp_connection
                units = define_mcp_connection(command="python -m units_server")
            """,
        }
    )
    linear, units = discover(root).mcp_connections
    assert (linear.name, linear.transport, linear.url) == (
        "linear",
        "http",
        "https://mcp.example.com/mcp",
    )
    assert linear.header_names == ["Authorization"]
    assert (units.transport, units.command) == ("stdio", ["python", "-m", "units_server"])


def test_channel_routes_are_served_under_the_channel_name(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/channels/drive.py": """
                from pydantic import BaseModel
                from agentkit import define_channel, route

                class Body(BaseModel):
                    pr: int

                async def start(body: Body, ctx):
                    return {}

                async def status(body, ctx):
                    return {}

                def deliver(event, ctx):
                    pass

                channel = define_channel(
                    routes=[route("POST", "/", start), ("GET", "/status", status)],
                    events={"turn.completed": deliver},
                )
            """
        }
    )
    (channel,) = discover(root).channels
    assert channel.name == "drive"
    assert channel.events == ["turn.completed"]
    assert [(r.method, r.path) for r in channel.routes] == [
        ("POST", "/v1/channels/drive"),
        ("GET", "/v1/channels/drive/status"),
    ]
    assert channel.routes[0].body_schema is not None
    assert channel.routes[0].body_schema["required"] == ["pr"]
    assert channel.routes[1].body_schema is None


def test_hooks_list_their_event_types(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/hooks/audit.py": """
                from agentkit import define_hook
                hook = define_hook(events={"turn.completed": print, "*": print})
            """
        }
    )
    (hook,) = discover(root).hooks
    assert (hook.name, hook.events) == ("audit", ["*", "turn.completed"])


AB = """
    from agentkit import define_ab
    ab = define_ab({name}variants={{"a": {{"weight": 1}}, "b": {{"weight": 3}}}})
"""


def test_ab_file_names_the_experiment_unless_name_overrides(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/ab.py": AB.format(name=""),
            "agent/ab/concise.py": AB.format(name=""),
            "agent/ab/other.py": AB.format(name='name="tone", '),
        }
    )
    m = discover(root)
    assert [a.name for a in m.abs] == ["ab", "concise", "tone"]
    assert m.abs[0].weights == {"a": 1.0, "b": 3.0}


def test_schedules_markdown_and_handler(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/schedules/heartbeat.md": '---\ncron: "0 9 * * 1-5"\n---\n\nSummarize.\n',
            "agent/schedules/alerts.py": """
                from agentkit import define_schedule
                async def run(ctx):
                    pass
                schedule = define_schedule(cron="*/30 * * * *", run=run)
            """,
        }
    )
    alerts, heartbeat = discover(root).schedules
    assert (alerts.id, alerts.cron, alerts.kind) == ("alerts", "*/30 * * * *", "handler")
    assert (heartbeat.kind, heartbeat.prompt) == ("markdown", "Summarize.\n")


def test_workspace_files_are_listed(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/sandbox/workspace/README.md": "hi",
            "agent/sandbox/workspace/data/a.csv": "x,y",
        }
    )
    assert discover(root).workspace_files == ["README.md", "data/a.csv"]


def test_lib_is_importable_and_never_discovered(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "agent/lib/text.py": "def shout(s):\n    return s.upper()\n",
            "agent/tools/loud.py": """
                from agent.lib.text import shout
                from agentkit import define_tool

                @define_tool(description="Shout.", input_schema={"type": "object"})
                def loud(input, ctx):
                    return shout(input["text"])
            """,
        }
    )
    bundle = AgentBundle.discover(root)
    assert bundle.manifest.diagnostics == []
    assert [t.name for t in bundle.manifest.tools] == ["loud"]
    tool = bundle.tool("loud")
    assert tool is not None and tool.handler({"text": "hey"}, None) == "HEY"


def test_evals_live_at_the_project_root(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "evals/evals.config.py": (
                "from agentkit import define_evals_config\n"
                "config = define_evals_config(max_concurrency=3)\n"
            ),
            "evals/review/basic.eval.py": (
                "from agentkit import define_eval\n"
                "case = define_eval(message='hi', tags=['smoke'])\n"
            ),
            "evals/helpers.py": "X = 1\n",
            "agent/evals/ignored.eval.py": "raise RuntimeError('never imported')\n",
        }
    )
    m = discover(root)
    assert [(e.id, e.tags) for e in m.evals] == [("review/basic", ["smoke"])]
    assert m.evals_config == {
        "maxConcurrency": 3,
        "timeout": 300.0,
        "trials": 1,
        "maxTrials": 10,
        "flakyFails": False,
        "maxPlaygroundRuns": 20,
        "persistRuns": False,
    }
    assert m.diagnostics == []  # agent/evals/ is silently ignored


def test_root_name_comes_from_pyproject(project_tree: ProjectTree) -> None:
    root = project_tree({"pyproject.toml": '[project]\nname = "weather-bot"\n'}, name="wx")
    agent = discover(root).agent
    assert (agent.name, agent.slug) == ("weather-bot", "wx")


def test_root_name_falls_back_to_the_folder_name(project_tree: ProjectTree) -> None:
    assert discover(project_tree(name="my-agent")).agent.name == "my-agent"


def test_define_agent_name_wins_over_pyproject(project_tree: ProjectTree) -> None:
    root = project_tree(
        {
            "pyproject.toml": '[project]\nname = "framework"\n',
            "agent/agent.py": (
                "from agentkit import define_agent\n"
                "agent = define_agent(name='assistant', model='test', temperature=0.2)\n"
            ),
        }
    )
    agent = discover(root).agent
    assert (agent.name, agent.model, agent.options) == ("assistant", "test", {"temperature": 0.2})


def test_handlers_imported_lazily_run(project_tree: ProjectTree) -> None:
    bundle = AgentBundle.discover(project_tree({"agent/tools/get_weather.py": WEATHER_TOOL}))
    tool = bundle.tool("get_weather")
    assert tool is not None and tool.input_model is not None
    out = asyncio.run(tool.handler(tool.input_model(city="Oslo"), None))
    assert out == {"city": "Oslo", "tempC": 21}
