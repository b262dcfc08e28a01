"""`agentkit init`: a new agent project that validates cleanly."""

from __future__ import annotations

from pathlib import Path

from agentkit.errors import ProjectError
from agentkit.version import __version__

_INSTRUCTIONS = """# {name}

You are a helpful, concise assistant.

- Use `roll_dice` when the user asks for a random roll.
- Keep replies short.
"""

_AGENT = """from agentkit import define_agent

# Add model="provider:model" (test, bedrock:..., anthropic:..., openai:...) to choose one.
# AGENTKIT_MODEL (ModelId when deployed) takes precedence; with neither, the offline `test`
# model answers.
agent = define_agent(max_steps=10)
"""

_TOOL = """import random

from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool


class RollInput(BaseModel):
    sides: int = Field(default=6, ge=2, le=1000, description="Number of sides of the die")


@define_tool(description="Roll one die and return the result.")
def roll_dice(input: RollInput, ctx: ToolContext) -> dict[str, int]:
    return {"sides": input.sides, "result": random.randint(1, input.sides)}
"""

_EVALS_CONFIG = """from agentkit import define_evals_config

config = define_evals_config(max_concurrency=2)
"""

_EVAL = """from agentkit import called_tool, define_eval, succeeded

case = define_eval(
    message="Roll a 20-sided die for me.",
    assertions=[succeeded(), called_tool("roll_dice")],
    tags=["smoke"],
)
"""

_PYPROJECT = """[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["agentkit-serverless>={version}"]

# agent/ and evals/ are folders agentkit reads, not Python packages: install no modules.
[tool.setuptools]
packages = []
"""

_GITIGNORE = ".agentkit/\n.aws-sam/\n__pycache__/\nbuild/\n*.egg-info/\n"


def scaffold(target: Path, name: str | None = None) -> list[str]:
    """Write a starter project into `target` (created if needed). Returns the files written.

    Refuses when `target/agent` already exists so nothing is overwritten.
    """
    from agentkit.aws.project_files import project_files
    from agentkit.project.validation import slug_problem

    target = Path(target)
    slug = target.resolve().name
    problem = slug_problem(slug)
    if problem:
        raise ProjectError(f"the folder name becomes the agent's URL slug: {problem}")
    if (target / "agent").exists():
        raise ProjectError(f"{target / 'agent'} already exists; not overwriting it")
    display = name or slug
    files = {
        "pyproject.toml": _PYPROJECT.format(name=slug, version=__version__),
        ".gitignore": _GITIGNORE,
        "agent/instructions.md": _INSTRUCTIONS.format(name=display),
        "agent/agent.py": _AGENT,
        "agent/tools/roll_dice.py": _TOOL,
        "evals/evals.config.py": _EVALS_CONFIG,
        "evals/roll.eval.py": _EVAL,
        **project_files(slug),
    }
    written = []
    for rel, text in files.items():
        path = target / rel
        if path.exists():
            continue  # keep the user's pyproject.toml / .gitignore
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(rel)
    return written
