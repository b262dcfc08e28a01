"""A small agent project with evals, written per test, for the runner, CLI and routes."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from tests.conftest import REPO_ROOT

TOOLS = {
    "agent/instructions.md": "You are a test agent. Keep answers short.\n",
    "agent/tools/get_weather.py": """
        from pydantic import BaseModel, Field
        from agentkit import ToolContext, define_tool


        class WeatherInput(BaseModel):
            city: str = Field(description="City name")


        @define_tool(description="Get the current weather for a city.")
        async def get_weather(input: WeatherInput, ctx: ToolContext) -> dict:
            return {"city": input.city, "tempC": 21, "condition": "sunny"}
    """,
    "agent/tools/wipe_notes.py": """
        from pydantic import BaseModel
        from agentkit import ToolContext, define_tool


        class WipeInput(BaseModel):
            folder: str = "notes"


        @define_tool(description="Delete every note in a folder.", needs_approval=True)
        async def wipe_notes(input: WipeInput, ctx: ToolContext) -> dict:
            return {"wiped": input.folder}
    """,
}
CONFIG = "from agentkit import define_evals_config\n\nconfig = define_evals_config({args})\n"


def write_project(
    root: Path,
    evals: dict[str, str],
    *,
    config: str | None = "max_concurrency=2",
    extra: dict[str, str] | None = None,
    remind_me: bool = False,
) -> Path:
    """An agent under `root` with these eval files (`name` -> body, under evals/)."""
    files = dict(TOOLS)
    files.update(extra or {})
    for name, body in evals.items():
        files[f"evals/{name}"] = body
    if config is not None:
        files["evals/evals.config.py"] = CONFIG.format(args=config)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    if remind_me:
        src = REPO_ROOT / "examples" / "pr-review" / "agent" / "tools" / "remind_me.py"
        shutil.copy(src, root / "agent" / "tools" / "remind_me.py")
    return root


def case(body: str) -> str:
    """An eval file importing everything from agentkit.evals."""
    return (
        "from agentkit.evals import *  # noqa: F403\n\ncase = "
        + textwrap.dedent(body).strip()
        + "\n"
    )
