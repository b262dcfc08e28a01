"""AgentBundle: lazy, cached definitions and isolation between projects in one process."""

from __future__ import annotations

import py_compile
import sys
from pathlib import Path

import pytest

from agentkit.authoring.schedules import ScheduleDefinition
from agentkit.errors import ProjectError
from agentkit.project.build import build_project
from agentkit.project.bundle import AgentBundle
from tests.fixtures.project_tree import write_tree


def _project(root: Path, answer: str) -> Path:
    return write_tree(
        root,
        {
            "agent/instructions.md": "x",
            "agent/lib/consts.py": f"ANSWER = {answer!r}\n",
            "agent/tools/answer.py": """
                from agent.lib.consts import ANSWER
                from agentkit import define_tool

                @define_tool(description="Answer.", input_schema={"type": "object"})
                def answer(input, ctx):
                    return ANSWER
            """,
        },
    )


def test_two_projects_with_an_agent_package_stay_apart(tmp_path: Path) -> None:
    a = AgentBundle.discover(_project(tmp_path / "a", "from A"))
    b = AgentBundle.discover(_project(tmp_path / "b", "from B"))
    tool_a, tool_b = a.tool("answer"), b.tool("answer")
    assert tool_a is not None and tool_b is not None
    assert (tool_a.handler({}, None), tool_b.handler({}, None)) == ("from A", "from B")


def test_discovery_leaves_no_agent_modules_behind(tmp_path: Path) -> None:
    before = {k for k in sys.modules if k == "agent" or k.startswith("agent.")}
    AgentBundle.discover(_project(tmp_path / "a", "x"))
    after = {k for k in sys.modules if k == "agent" or k.startswith("agent.")}
    assert after == before


def test_definitions_are_cached(tmp_path: Path) -> None:
    bundle = AgentBundle.discover(_project(tmp_path / "a", "x"))
    assert bundle.tool("answer") is bundle.tool("answer")


def test_unknown_names_return_none(tmp_path: Path) -> None:
    bundle = AgentBundle.discover(_project(tmp_path / "a", "x"))
    assert bundle.tool("nope") is None
    assert bundle.hook("nope") is None
    assert bundle.schedule("nope") is None
    assert bundle.channel("nope") is None


def test_built_bundle_imports_nothing_until_asked(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "agent/instructions.md": "x",
            "agent/tools/counter.py": """
                import builtins
                from agentkit import define_tool
                builtins.__dict__.setdefault("_agentkit_test_imports", []).append("counter")

                @define_tool(description="Count.", input_schema={"type": "object"})
                def counter(input, ctx):
                    return 1
            """,
        },
    )
    out = build_project(root, tmp_path / "build").out
    import builtins

    builtins.__dict__["_agentkit_test_imports"] = []
    bundle = AgentBundle.load_built(out)
    assert bundle.manifest.tools[0].name == "counter"
    assert builtins.__dict__["_agentkit_test_imports"] == []
    tool = bundle.tool("counter")
    assert tool is not None and tool.handler({}, None) == 1
    assert builtins.__dict__.pop("_agentkit_test_imports") == ["counter"]


def test_markdown_schedule_is_rebuilt_from_the_manifest(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "agent/instructions.md": "x",
            "agent/schedules/beat.md": "---\ncron: '0 9 * * *'\n---\nSummarize.\n",
        },
    )
    schedule = AgentBundle.discover(root).schedule("beat")
    assert isinstance(schedule, ScheduleDefinition)
    assert (schedule.cron, schedule.markdown, schedule.kind) == (
        "0 9 * * *",
        "Summarize.\n",
        "markdown",
    )


def test_sandbox_dir(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj", {"agent/instructions.md": "x", "agent/sandbox/workspace/a.txt": "a"}
    )
    bundle = AgentBundle.discover(root)
    assert bundle.sandbox_dir == root.resolve() / "agent" / "sandbox" / "workspace"


def test_require_valid_raises_with_the_diagnostics(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"agent/tools/x.py": "X = 1\n"})
    with pytest.raises(ProjectError) as info:
        AgentBundle.discover(root).require_valid()
    assert {d.code for d in info.value.diagnostics} == {"instructions.missing", "definition.none"}


def test_load_built_without_manifest_is_a_project_error(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match=r"manifest\.json"):
        AgentBundle.load_built(tmp_path)


def test_load_built_with_corrupt_manifest_is_a_project_error(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ProjectError, match="not a valid manifest"):
        AgentBundle.load_built(tmp_path)


def test_rediscovery_sees_an_edited_file(tmp_path: Path) -> None:
    root = _project(tmp_path / "a", "one")
    first = AgentBundle.discover(root).tool("answer")
    consts = root / "agent" / "lib" / "consts.py"
    py_compile.compile(str(consts))  # a bytecode cache that an edit in the same second
    consts.write_text("ANSWER = 'two'\n")  # of the same size would not invalidate
    second = AgentBundle.discover(root).tool("answer")
    assert first is not None and second is not None
    assert (first.handler({}, None), second.handler({}, None)) == ("one", "two")
