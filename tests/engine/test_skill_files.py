"""`read_skill_file` reads only the files of the skill it names: no path outside the skill
folder, no other skill's file, no file of the agent beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.events import ActionResult
from agentkit.models.scripted import ScriptedModel, Step, call
from tests.engine.conftest import ALICE, FILES, Env, settle, write_project

SKILLS = {
    "agent/skills/release/SKILL.md": """
        ---
        description: Use when shipping a release.
        ---
        Read notes.md first.
    """,
    "agent/skills/release/notes.md": "Tag, then publish.\n",
    "agent/skills/secrets/SKILL.md": """
        ---
        description: Use for credentials.
        ---
        See keys.md.
    """,
    "agent/skills/secrets/keys.md": "not for the release skill\n",
}
OUTSIDE = [
    "../secrets/keys.md",  # another skill's file, by a relative path
    "keys.md",  # another skill's file, by its own name
    "../../instructions.md",  # the agent's instructions beside the skills
    "../../tools/add.py",  # source code of the agent
    "/etc/passwd",
    "notes.md/../../secrets/keys.md",
    "./notes.md/..",
    "",
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "proj", {**FILES, **SKILLS})


async def read(env: Env, path: str) -> ActionResult:
    model = ScriptedModel(
        [
            Step.tool_calls(call("read_skill_file", {"name": "release", "path": path}, id="c")),
            Step.text("ok"),
        ]
    )
    rt = env.runtime(model)
    acc = await rt.start_session("read it", principal=ALICE)
    await settle(rt)
    events = await rt.store.read(acc.session_id)
    return next(e for e in events if e.type == "action.result").as_(ActionResult)


async def test_a_file_of_the_skill_is_read(env: Env) -> None:
    result = await read(env, "notes.md")
    assert not result.is_error
    assert result.result["content"] == "Tag, then publish.\n"


@pytest.mark.parametrize("path", OUTSIDE)
async def test_a_path_outside_the_skill_is_refused(env: Env, path: str) -> None:
    result = await read(env, path)
    assert result.is_error, result
    assert "has no file" in (result.error or "")
    assert "not for the release skill" not in repr(result)
    assert "You are a test agent" not in repr(result)
    assert "root:" not in repr(result)
