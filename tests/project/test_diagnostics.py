"""Every diagnostic code: each small project tree produces exactly the expected finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.models import TestModel, parse_model_id, resolve_model
from agentkit.project.bundle import AgentBundle
from agentkit.project.diagnostics import CODES
from tests.fixtures.project_tree import ProjectTree, write_tree

SUBAGENT_OK = "from agentkit import define_agent\nagent = define_agent(description='d')\n"
TOOL = """
from agentkit import define_tool

@define_tool(description="A tool.", input_schema={{"type": "object"}})
def {name}(input, ctx):
    return 1
"""

CASES: dict[str, tuple[dict[str, str | bytes], str, str]] = {
    # id: (files on top of the minimal project, expected code, expected path)
    "no instructions": (
        {"agent/instructions.md": None, "agent/lib/util.py": "X = 1\n"},  # type: ignore[dict-item]
        "instructions.missing",
        "agent/instructions.md",
    ),
    "two instruction forms": (
        {"agent/instructions/a.md": "A"},
        "instructions.conflict",
        "agent",
    ),
    "empty instructions": (
        {"agent/instructions.md": "\n"},
        "instructions.empty",
        "agent/instructions.md",
    ),
    "tool file defines nothing": (
        {"agent/tools/helper.py": "def helper():\n    pass\n"},
        "definition.none",
        "agent/tools/helper.py",
    ),
    "tool file defines two tools": (
        {"agent/tools/two.py": TOOL.format(name="a") + TOOL.format(name="b")},
        "definition.multiple",
        "agent/tools/two.py",
    ),
    "hook file defines nothing": (
        {"agent/hooks/h.py": "X = 1\n"},
        "definition.none",
        "agent/hooks/h.py",
    ),
    "syntax error": (
        {"agent/tools/broken.py": "def broken(:\n"},
        "import.failed",
        "agent/tools/broken.py",
    ),
    "import error": (
        {"agent/tools/missing.py": "import not_a_real_module_xyz\n"},
        "import.failed",
        "agent/tools/missing.py",
    ),
    "exception at import": (
        {"agent/channels/boom.py": "raise RuntimeError('boom at import')\n"},
        "import.failed",
        "agent/channels/boom.py",
    ),
    "sys.exit at import": (
        {"agent/hooks/leave.py": "import sys\nsys.exit(3)\n"},
        "import.failed",
        "agent/hooks/leave.py",
    ),
    "define_* raising at import": (
        {
            "agent/schedules/bad.py": (
                "from agentkit import define_schedule\ns = define_schedule(cron='* * * * *')\n"
            )
        },
        "import.failed",
        "agent/schedules/bad.py",
    ),
    "invalid cron in markdown": (
        {"agent/schedules/x.md": "---\ncron: '61 * * * *'\n---\nGo.\n"},
        "schedule.invalid_cron",
        "agent/schedules/x.md",
    ),
    "six-field cron": (
        {"agent/schedules/x.md": "---\ncron: '0 0 9 * * 1'\n---\nGo.\n"},
        "schedule.invalid_cron",
        "agent/schedules/x.md",
    ),
    "cron EventBridge cannot run": (
        {"agent/schedules/x.md": "---\ncron: '0 0 1 * 1'\n---\nGo.\n"},
        "schedule.cron_not_on_aws",
        "agent/schedules/x.md",
    ),
    "untyped tool input": (
        {
            "agent/tools/t.py": (
                "from agentkit import define_tool\n"
                "@define_tool(description='T.')\n"
                "def t(input, ctx):\n    return 1\n"
            )
        },
        "tool.untyped_input",
        "agent/tools/t.py",
    ),
    "markdown schedule without cron": (
        {"agent/schedules/x.md": "Go.\n"},
        "schedule.invalid_cron",
        "agent/schedules/x.md",
    ),
    "invalid cron in handler": (
        {
            "agent/schedules/y.py": (
                "from agentkit import define_schedule\n"
                "s = define_schedule(cron='every day', run=print)\n"
            )
        },
        "schedule.invalid_cron",
        "agent/schedules/y.py",
    ),
    "empty markdown schedule": (
        {"agent/schedules/x.md": "---\ncron: '0 9 * * *'\n---\n"},
        "schedule.empty_prompt",
        "agent/schedules/x.md",
    ),
    "schedule with an unknown catch_up": (
        {"agent/schedules/x.md": "---\ncron: '0 9 * * *'\ncatch_up: replay\n---\n\nReport.\n"},
        "schedule.invalid_catch_up",
        "agent/schedules/x.md",
    ),
    "skill directory without description": (
        {"agent/skills/s/SKILL.md": "# Steps\n"},
        "skill.missing_description",
        "agent/skills/s/SKILL.md",
    ),
    "skill directory without SKILL.md": (
        {"agent/skills/s/notes.md": "x"},
        "skill.missing_file",
        "agent/skills/s",
    ),
    "empty flat skill": (
        {"agent/skills/s.md": ""},
        "skill.missing_description",
        "agent/skills/s.md",
    ),
    "malformed frontmatter yaml": (
        {"agent/skills/s.md": "---\ndescription: [unclosed\n---\nBody\n"},
        "frontmatter.malformed",
        "agent/skills/s.md",
    ),
    "unclosed frontmatter": (
        {"agent/schedules/x.md": "---\ncron: '0 9 * * *'\nGo.\n"},
        "frontmatter.malformed",
        "agent/schedules/x.md",
    ),
    "frontmatter that is not a mapping": (
        {"agent/skills/s.md": "---\n- a\n- b\n---\nBody\n"},
        "frontmatter.malformed",
        "agent/skills/s.md",
    ),
    "tool named like a built-in": (
        {"agent/tools/load_skill.py": TOOL.format(name="load_skill")},
        "tool.reserved_name",
        "agent/tools/load_skill.py",
    ),
    "tool named task": (
        {"agent/tools/task.py": TOOL.format(name="task")},
        "tool.reserved_name",
        "agent/tools/task.py",
    ),
    "two tools differing only by case": (
        {
            "agent/tools/Search.py": TOOL.format(name="Search"),
            "agent/tools/search.py": TOOL.format(name="search"),
        },
        "tool.duplicate",
        "agent/tools/search.py",
    ),
    "unset variable in an MCP connection": (
        {
            "agent/mcp-connections/linear.py": (
                "from agentkit import define_mcp_connection\n"
                "linear = define_mcp_connection(url='https://mcp.example.com/mcp', "
                "headers={'Authorization': 'Bearer ${AGENTKIT_TEST_SURELY_UNSET}'})\n"
            )
        },
        "mcp.env_unset",
        "agent/mcp-connections/linear.py",
    ),
    "unreadable mcp.lock": (
        {"agent/mcp.lock": "{not json"},
        "mcp.lock_invalid",
        "agent/mcp.lock",
    ),
    "invalid tool name": (
        {"agent/tools/get weather.py": TOOL.format(name="get_weather")},
        "name.invalid",
        "agent/tools/get weather.py",
    ),
    "invalid root model": (
        {
            "agent/agent.py": (
                "from agentkit import define_agent\nagent = define_agent(model='gpt-4o')\n"
            )
        },
        "model.invalid",
        "agent/agent.py",
    ),
    "unknown provider": (
        {
            "agent/agent.py": (
                "from agentkit import define_agent\nagent = define_agent(model='acme:x')\n"
            )
        },
        "model.invalid",
        "agent/agent.py",
    ),
    "test model given a model name": (
        {
            "agent/agent.py": (
                "from agentkit import define_agent\nagent = define_agent(model='test:x')\n"
            )
        },
        "model.invalid",
        "agent/agent.py",
    ),
    "invalid subagent model": (
        {
            "agent/subagents/r/agent.py": (
                "from agentkit import define_agent\n"
                "agent = define_agent(description='d', model='bedrock:')\n"
            ),
            "agent/subagents/r/instructions.md": "i",
        },
        "model.invalid",
        "agent/subagents/r/agent.py",
    ),
    "invalid A/B variant model": (
        {
            "agent/ab.py": (
                "from agentkit import define_ab\n"
                "ab = define_ab(variants={'a': {}, 'b': {'model': 'nope'}})\n"
            )
        },
        "model.invalid",
        "agent/ab.py",
    ),
    "subagent without description": (
        {
            "agent/subagents/r/agent.py": (
                "from agentkit import define_agent\nagent = define_agent()\n"
            )
        },
        "subagent.missing_description",
        "agent/subagents/r/agent.py",
    ),
    "subagent without agent.py": (
        {"agent/subagents/r/instructions.md": "i"},
        "subagent.missing_description",
        "agent/subagents/r/agent.py",
    ),
    "subagent without instructions": (
        {"agent/subagents/r/agent.py": SUBAGENT_OK},
        "subagent.missing_instructions",
        "agent/subagents/r",
    ),
    "nested subagents": (
        {
            "agent/subagents/r/agent.py": SUBAGENT_OK,
            "agent/subagents/r/instructions.md": "i",
            "agent/subagents/r/subagents/deeper/agent.py": SUBAGENT_OK,
        },
        "subagent.nested",
        "agent/subagents/r/subagents",
    ),
    "subagent private skills": (
        {
            "agent/subagents/r/agent.py": SUBAGENT_OK,
            "agent/subagents/r/instructions.md": "i",
            "agent/subagents/r/skills/x.md": "x",
        },
        "subagent.ignored_folder",
        "agent/subagents/r/skills",
    ),
    "duplicate skill name across forms": (
        {
            "agent/skills/s.md": "---\ndescription: d\n---\n",
            "agent/skills/s/SKILL.md": "---\ndescription: d\n---\n",
        },
        "name.duplicate",
        "agent/skills/s.md",
    ),
    "duplicate A/B name": (
        {
            "agent/ab.py": (
                "from agentkit import define_ab\n"
                "ab = define_ab(name='x', variants={'a': {}, 'b': {}})\n"
            ),
            "agent/ab/x.py": (
                "from agentkit import define_ab\nab = define_ab(variants={'a': {}, 'b': {}})\n"
            ),
        },
        "name.duplicate",
        "agent/ab/x.py",
    ),
    "duplicate schedule id": (
        {
            "agent/schedules/beat.md": "---\ncron: '0 9 * * *'\n---\nGo.\n",
            "agent/schedules/beat.py": (
                "from agentkit import define_schedule\n"
                "s = define_schedule(cron='0 9 * * *', markdown='Go')\n"
            ),
        },
        "name.duplicate",
        "agent/schedules/beat.py",
    ),
    "stray file in tools": (
        {"agent/tools/README.txt": "x"},
        "file.ignored",
        "agent/tools/README.txt",
    ),
    "unknown top-level entry": ({"agent/utils.py": "X = 1\n"}, "file.ignored", "agent/utils.py"),
    "non-UTF-8 markdown": (
        {"agent/skills/latin.md": "caf\xe9".encode("latin-1")},
        "file.not_utf8",
        "agent/skills/latin.md",
    ),
    "non-UTF-8 python": (
        {"agent/tools/latin.py": b'X = "caf\xe9"\n'},
        "import.failed",
        "agent/tools/latin.py",
    ),
    "agent options that are not JSON": (
        {
            "agent/agent.py": (
                "from agentkit import define_agent\nagent = define_agent(when=object())\n"
            )
        },
        "agent.options_not_json",
        "agent/agent.py",
    ),
    "a schedule frontmatter typo": (
        {"agent/schedules/daily.md": "---\ncron: '0 9 * * *'\ncorn: '0 9 * * *'\n---\nReport.\n"},
        "schedule.unknown_key",
        "agent/schedules/daily.md",
    ),
    "a skill frontmatter typo": (
        {"agent/skills/tone.md": "---\ndescription: Tone.\ndescripton: x\n---\nBe kind.\n"},
        "skill.unknown_key",
        "agent/skills/tone.md",
    ),
    "a define_agent keyword typo": (
        {"agent/agent.py": "from agentkit import define_agent\nagent = define_agent(max_step=3)\n"},
        "agent.unknown_option",
        "agent/agent.py",
    ),
    "a define_agent keyword for another host": (
        {
            "agent/agent.py": (
                "from agentkit import define_agent\nagent = define_agent(runtime='node')\n"
            )
        },
        "agent.option_no_effect",
        "agent/agent.py",
    ),
    "a Field keyword typo": (
        {
            "agent/tools/roll.py": (
                "from pydantic import BaseModel, Field\n"
                "from agentkit import define_tool\n\n"
                "class RollInput(BaseModel):\n"
                "    sides: int = Field(defualt=6)\n\n"
                "@define_tool(description='Roll a die.')\n"
                "def roll(input: RollInput, ctx):\n    return 1\n"
            )
        },
        "field.unknown_keyword",
        "agent/tools/roll.py",
    ),
    "evals without a config": (
        {"evals/a.eval.py": "from agentkit import define_eval\ncase = define_eval(message='hi')\n"},
        "evals.config_missing",
        "evals",
    ),
}

# The findings a case's mistake brings along besides its own (each a consequence of it).
ALSO: dict[str, set[tuple[str, str]]] = {
    "agent options that are not JSON": {("agent.unknown_option", "agent/agent.py")},
}


def test_a_define_agent_typo_names_the_keyword_meant(tmp_path: Path) -> None:
    agent_py = "from agentkit import define_agent\nagent = define_agent(max_step=3)\n"
    root = write_tree(tmp_path / "proj", _tree({"agent/agent.py": agent_py}))
    diagnostics = AgentBundle.discover(root).manifest.diagnostics
    [found] = [d for d in diagnostics if d.code == "agent.unknown_option"]
    assert found.severity == "error"
    assert found.message == "define_agent: unknown keyword max_step; did you mean max_steps?"


def _tree(files: dict[str, str | bytes]) -> dict[str, str | bytes]:
    tree: dict[str, str | bytes] = {"agent/instructions.md": "Be brief.\n"}
    for rel, content in files.items():
        if content is None:
            tree.pop(rel, None)
        else:
            tree[rel] = content
    return tree


@pytest.mark.parametrize("case", sorted(CASES), ids=sorted(CASES))
def test_each_mistake_gets_its_diagnostic(tmp_path: Path, case: str) -> None:
    files, code, path = CASES[case]
    root = write_tree(tmp_path / "proj", _tree(files))
    manifest = AgentBundle.discover(root).manifest
    found = {(d.code, d.path) for d in manifest.diagnostics}
    assert found == {(code, path), *ALSO.get(case, ())}, found
    diag = next(d for d in manifest.diagnostics if d.code == code)
    assert diag.severity == CODES[code][0]
    assert diag.message.strip()


def test_every_code_is_exercised_here_or_in_its_own_test() -> None:
    exercised = {code for _, code, _ in CASES.values()}
    own_tests = {
        "project.no_agent_dir",
        "slug.invalid",
        "path.outside_project",
        "file.unreadable",
        "file.too_large",
        "mcp.lock_drift",  # needs live servers: tests/mcp/test_served_connections.py
    }
    assert set(CODES) == exercised | own_tests


def test_import_error_carries_the_traceback(project_tree: ProjectTree) -> None:
    root = project_tree(
        {"agent/tools/boom.py": "def f():\n    raise ValueError('bad config')\n\nf()\n"}
    )
    (diag,) = AgentBundle.discover(root).manifest.diagnostics
    assert "ValueError: bad config" in diag.message
    assert 'File "agent/tools/boom.py", line 2' in diag.message
    assert str(root) not in diag.message  # no machine paths leak into the manifest


@pytest.mark.parametrize("name", ["v1", "playground", "docs", "-dash", "has space"])
def test_invalid_slug(tmp_path: Path, name: str) -> None:
    root = write_tree(tmp_path / name, {"agent/instructions.md": "x"})
    codes = [d.code for d in AgentBundle.discover(root).manifest.diagnostics]
    assert codes == ["slug.invalid"]


def test_missing_agent_folder(project_tree: ProjectTree) -> None:
    root = project_tree({"README.md": "x"}, minimal=False)
    m = AgentBundle.discover(root).manifest
    assert [d.code for d in m.diagnostics] == ["project.no_agent_dir"]
    assert m.has_errors


def test_warnings_do_not_make_the_manifest_invalid(project_tree: ProjectTree) -> None:
    m = AgentBundle.discover(project_tree({"agent/tools/notes.txt": "x"})).manifest
    assert m.diagnostics and not m.has_errors


@pytest.mark.parametrize("model_id", ["Anthropic:claude-sonnet-4-5", "OPENAI:gpt-4o", "Test"])
def test_provider_names_match_without_regard_to_case(
    project_tree: ProjectTree, model_id: str
) -> None:
    agent_py = f"from agentkit import define_agent\nagent = define_agent(model={model_id!r})\n"
    m = AgentBundle.discover(project_tree({"agent/agent.py": agent_py})).manifest
    assert m.diagnostics == []
    assert m.agent.model == model_id
    # The id that validated is one the runtime resolves to the same provider.
    assert parse_model_id(model_id)[0] == model_id.partition(":")[0].lower()


def test_a_validated_test_model_id_resolves_to_the_test_model(project_tree: ProjectTree) -> None:
    agent_py = "from agentkit import define_agent\nagent = define_agent(model='TEST')\n"
    m = AgentBundle.discover(project_tree({"agent/agent.py": agent_py})).manifest
    assert m.diagnostics == []
    assert isinstance(resolve_model(m.agent.model), TestModel)


def test_instructions_py_that_fails_to_import_is_named_not_instructions_md(
    tmp_path: Path,
) -> None:
    root = write_tree(tmp_path / "proj", {"agent/instructions.py": "import not_a_module_here\n"})
    diagnostics = AgentBundle.discover(root).manifest.diagnostics
    [missing] = [d for d in diagnostics if d.code == "instructions.missing"]
    assert missing.path == "agent/instructions.py"
    assert "write agent/instructions.md" not in missing.message
    assert any(d.code == "import.failed" and d.path == "agent/instructions.py" for d in diagnostics)


def test_a_define_tool_typo_names_the_keyword_meant(tmp_path: Path) -> None:
    tool = (
        "from agentkit import define_tool\n\n"
        "@define_tool(descriptin='Roll.')\n"
        "def roll(input, ctx):\n    return 1\n"
    )
    root = write_tree(tmp_path / "proj", _tree({"agent/tools/roll.py": tool}))
    [failed] = [
        d for d in AgentBundle.discover(root).manifest.diagnostics if d.code == "import.failed"
    ]
    first_line = failed.message.splitlines()[0]
    assert "'descriptin'" in first_line
    assert first_line.endswith("(did you mean description?)")


def test_every_diagnostic_code_is_area_dot_name() -> None:
    import re

    from agentkit.aws import check

    source = Path(check.__file__).read_text(encoding="utf-8")
    codes = set(CODES) | set(re.findall(r'code="([^"]+)"', source))
    assert [c for c in sorted(codes) if not re.fullmatch(r"[a-z]+\.[a-z0-9_]+", c)] == []


def test_a_frontmatter_typo_names_the_key_meant(tmp_path: Path) -> None:
    schedule = "---\ncorn: '0 9 * * *'\n---\nReport.\n"
    root = write_tree(tmp_path / "proj", _tree({"agent/schedules/daily.md": schedule}))
    diagnostics = AgentBundle.discover(root).manifest.diagnostics
    [typo] = [d for d in diagnostics if d.code == "schedule.unknown_key"]
    assert typo.severity == "warning"
    assert typo.message == "unknown frontmatter key corn (ignored); did you mean cron?"
