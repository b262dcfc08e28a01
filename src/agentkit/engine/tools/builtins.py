"""Built-in tools: `load_skill`, `read_skill_file` and `task` (subagents).

Only skill and subagent descriptions ride in every prompt; the model loads a skill's full
markdown with `load_skill` and delegates with `task`. Built-ins appear only when the agent
has skills or subagents, and an authored tool of the same name wins.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, Field

from agentkit.authoring.contexts import ToolContext
from agentkit.authoring.tools import BUILTIN_TOOL_NAMES
from agentkit.engine.tools.calls import ToolEntry, ToolSource, authored_entry
from agentkit.errors import ToolError
from agentkit.project.manifest import Manifest

LOAD_SKILL = "load_skill"
READ_SKILL_FILE = "read_skill_file"
TASK = "task"
BUILTIN_NAMES = BUILTIN_TOOL_NAMES
log = logging.getLogger("agentkit.engine.tools")


class LoadSkillInput(BaseModel):
    name: str = Field(description="The skill's name, as listed in the skill catalog.")


class ReadSkillFileInput(BaseModel):
    name: str = Field(description="The skill's name.")
    path: str = Field(description="A file of the skill, as listed by load_skill.")


class TaskInput(BaseModel):
    subagent: str = Field(description="Which subagent to delegate to.")
    prompt: str = Field(description="The complete task for the subagent; it sees nothing else.")


def skill_entries(manifest: Manifest) -> list[ToolEntry]:
    """`load_skill` and `read_skill_file` over the manifest's skills (none without skills)."""
    skills = {s.name: s for s in manifest.skills}
    if not skills:
        return []

    def find(name: str) -> Any:
        skill = skills.get(name)
        if skill is None:
            raise ToolError(f"unknown skill {name!r}; available: {', '.join(sorted(skills))}")
        return skill

    def load_skill(value: LoadSkillInput, ctx: ToolContext) -> dict[str, Any]:
        skill = find(value.name)
        return {"name": skill.name, "markdown": skill.markdown, "files": sorted(skill.files)}

    def read_skill_file(value: ReadSkillFileInput, ctx: ToolContext) -> dict[str, Any]:
        skill = find(value.name)
        if value.path not in skill.files:
            listed = ", ".join(sorted(skill.files)) or "none"
            raise ToolError(f"skill {skill.name!r} has no file {value.path!r}; files: {listed}")
        return {"name": skill.name, "path": value.path, "content": skill.files[value.path]}

    return [
        ToolEntry(
            name=LOAD_SKILL,
            description="Load a skill's full instructions and the list of its files.",
            input_schema=LoadSkillInput.model_json_schema(),
            input_model=LoadSkillInput,
            builtin=load_skill,
        ),
        ToolEntry(
            name=READ_SKILL_FILE,
            description="Read one file of a skill (a path listed by load_skill).",
            input_schema=ReadSkillFileInput.model_json_schema(),
            input_model=ReadSkillFileInput,
            builtin=read_skill_file,
        ),
    ]


SubagentRunner = Callable[[TaskInput, ToolContext], Awaitable[str]]


def task_entry(manifest: Manifest, runner: SubagentRunner) -> ToolEntry | None:
    """The `task` tool, listing each subagent's description (None without subagents)."""
    if not manifest.subagents:
        return None
    catalog = "\n".join(f"- {s.name}: {s.description}" for s in manifest.subagents)
    return ToolEntry(
        name=TASK,
        description=(
            "Delegate a self-contained piece of work to a subagent and get its final answer."
            f" Subagents:\n{catalog}"
        ),
        input_schema=TaskInput.model_json_schema(),
        input_model=TaskInput,
        builtin=runner,
    )


def system_prompt(manifest: Manifest) -> str:
    """The composed instructions plus the skill catalog (descriptions only)."""
    parts = [manifest.instructions.strip()]
    if manifest.skills:
        lines = "\n".join(f"- {s.name}: {s.description}" for s in manifest.skills)
        parts.append(
            "## Skills\n\nLoad a skill with `load_skill` when the task calls for it.\n\n" + lines
        )
    return "\n\n".join(p for p in parts if p)


def _task_outside_turn(value: Any, ctx: ToolContext) -> Any:
    raise ToolError("the task tool runs only inside a model turn")


def tool_table(source: ToolSource) -> dict[str, ToolEntry]:
    """Every tool the model may call: the authored ones, then the built-ins.

    Server tools are imported here; one that fails to import stays in the table (its calls
    answer with an error) and the failure is logged. Agent-execution tools are never
    imported by the host.
    """
    table: dict[str, ToolEntry] = {}
    for spec in source.manifest.tools:
        definition = None
        if spec.execution == "server":
            try:
                definition = source.tool(spec.name)
            except Exception:
                log.exception("tool %s could not be imported; its calls will fail", spec.name)
        table[spec.name] = authored_entry(spec, definition)
    task = task_entry(source.manifest, _task_outside_turn)
    for entry in [*skill_entries(source.manifest), *([task] if task else [])]:
        table.setdefault(entry.name, entry)
    return table
