"""Typos caught where they are made: each names the key and the valid one meant."""

from __future__ import annotations

from pathlib import Path

from agentkit.project.bundle import AgentBundle
from agentkit.project.manifest import Diagnostic
from tests.fixtures.project_tree import write_tree

ROLL_INPUT = """\
from pydantic import BaseModel, Field


class RollInput(BaseModel):
    sides: int = Field(defualt=6, description="Faces of the die")
"""

ROLL_TOOL = """\
from agentkit import define_tool
from agent.lib.dice import RollInput


@define_tool(description="Roll a die.")
def roll(input: RollInput, ctx):
    return input.sides
"""


def diagnose(root: Path, files: dict[str, str]) -> list[Diagnostic]:
    tree = {"agent/instructions.md": "Be brief.\n", **files}
    return AgentBundle.discover(write_tree(root / "proj", tree)).manifest.diagnostics


def first_line(diagnostic: Diagnostic) -> str:
    return diagnostic.message.splitlines()[0]


def test_an_unknown_field_keyword_is_a_warning_with_the_keyword_meant(tmp_path: Path) -> None:
    tool = ROLL_INPUT + "\n\n" + ROLL_TOOL.replace("from agent.lib.dice import RollInput\n", "")
    found = diagnose(tmp_path, {"agent/tools/roll.py": tool})
    [typo] = [d for d in found if d.code == "field.unknown_keyword"]
    assert typo.severity == "warning"
    assert typo.path == "agent/tools/roll.py"
    assert typo.message == (
        "line 5: Field(defualt=...) is not a pydantic Field keyword, so it is ignored; "
        "did you mean default?"
    )


def test_a_field_typo_in_a_shared_module_names_that_module(tmp_path: Path) -> None:
    files = {"agent/lib/dice.py": ROLL_INPUT, "agent/tools/roll.py": ROLL_TOOL}
    [typo] = [d for d in diagnose(tmp_path, files) if d.code == "field.unknown_keyword"]
    assert typo.path == "agent/lib/dice.py"
    assert typo.message.startswith("line 5: Field(defualt=...)")


def test_correct_fields_give_no_warning(tmp_path: Path) -> None:
    tool = ROLL_INPUT.replace("defualt", "default") + "\n\n" + ROLL_TOOL.splitlines()[0]
    assert diagnose(tmp_path, {"agent/lib/dice.py": tool}) == []


def test_a_subagent_define_agent_typo_is_an_error_naming_the_keyword_meant(
    tmp_path: Path,
) -> None:
    agent_py = (
        "from agentkit import define_agent\n"
        "agent = define_agent(description='Reviews code.', max_step=3)\n"
    )
    files = {
        "agent/subagents/reviewer/agent.py": agent_py,
        "agent/subagents/reviewer/instructions.md": "Review.\n",
    }
    [typo] = [d for d in diagnose(tmp_path, files) if d.code == "agent.unknown_option"]
    assert typo.severity == "error"
    assert typo.path == "agent/subagents/reviewer/agent.py"
    assert typo.message == "define_agent: unknown keyword max_step; did you mean max_steps?"


def test_a_subagent_keyword_for_another_host_warns_it_has_no_effect(tmp_path: Path) -> None:
    agent_py = (
        "from agentkit import define_agent\n"
        "agent = define_agent(description='Reviews code.', cloud=True)\n"
    )
    files = {
        "agent/subagents/reviewer/agent.py": agent_py,
        "agent/subagents/reviewer/instructions.md": "Review.\n",
    }
    [found] = diagnose(tmp_path, files)
    assert (found.code, found.severity) == ("agent.option_no_effect", "warning")
    assert found.path == "agent/subagents/reviewer/agent.py"


def test_a_define_channel_typo_names_the_keyword_meant(tmp_path: Path) -> None:
    channel = (
        "from agentkit import define_channel, route\n\n"
        "async def drive(ctx):\n    return {}\n\n"
        "channel = define_channel(routes=[route('POST', '/', drive)], on_bussy='queue')\n"
    )
    [failed] = [
        d
        for d in diagnose(tmp_path, {"agent/channels/drive.py": channel})
        if d.code == "import.failed"
    ]
    assert failed.path == "agent/channels/drive.py"
    assert "'on_bussy'" in first_line(failed)
    assert first_line(failed).endswith("(did you mean on_busy?)")


def test_a_define_schedule_typo_names_the_keyword_meant(tmp_path: Path) -> None:
    schedule = (
        "from agentkit import define_schedule\n\n"
        "schedule = define_schedule(corn='0 9 * * *', markdown='Report.')\n"
    )
    [failed] = [
        d
        for d in diagnose(tmp_path, {"agent/schedules/daily.py": schedule})
        if d.code == "import.failed"
    ]
    assert "'corn'" in first_line(failed)
    assert first_line(failed).endswith("(did you mean cron?)")
