"""A small agent project with experiments and a budget, and runtimes over a file store."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.models.base import Model
from agentkit.project.bundle import AgentBundle
from agentkit.store.files import FileStore

PRICES = {"scripted": {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}}

BASE = {
    "agent/instructions.md": "You are a test agent.\n",
    "agent/tools/add.py": """
        from pydantic import BaseModel
        from agentkit import define_tool

        class AddInput(BaseModel):
            a: int
            b: int

        @define_tool(description="Add two integers.")
        def add(input: AddInput, ctx) -> dict:
            return {"sum": input.a + input.b, "abs": dict(ctx.session.abs)}
    """,
    "agent/tools/shout.py": """
        from pydantic import BaseModel
        from agentkit import define_tool

        class ShoutInput(BaseModel):
            text: str

        @define_tool(description="Shout a text.")
        def shout(input: ShoutInput, ctx) -> str:
            return input.text.upper()
    """,
}


def agent_py(**options: Any) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in options.items())
    return f"from agentkit import define_agent\nagent = define_agent({args})\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


RuntimeFactory = Callable[..., AgentRuntime]


@pytest.fixture
async def make_runtime(tmp_path: Path) -> AsyncIterator[RuntimeFactory]:
    """`make_runtime(files, model_for)`: a runtime over a file store for a project with
    `BASE` plus `files`; `model_for(model_id)` resolves models (a test double)."""
    made: list[tuple[AgentRuntime, FileStore]] = []
    count = 0

    def build(
        files: dict[str, str], model_for: Callable[[str | None], Model], **options: Any
    ) -> AgentRuntime:
        nonlocal count
        count += 1
        root = write(tmp_path / f"proj{count}", {**BASE, **files})
        bundle = AgentBundle.discover(root)
        assert not bundle.manifest.has_errors, bundle.manifest.diagnostics
        store = FileStore(tmp_path / f"state{count}")
        rt = AgentRuntime(
            bundle,
            store,
            model_resolver=model_for,
            state_root=tmp_path / f"state{count}",
            **options,
        )
        made.append((rt, store))
        return rt

    yield build
    for rt, store in made:
        if isinstance(rt.dispatcher, LocalDispatcher):
            await rt.dispatcher.close()
        await store.close()


async def settle(rt: AgentRuntime) -> None:
    d = rt.dispatcher
    assert isinstance(d, LocalDispatcher)
    await d.drain()
