"""Per-send workspace files that cannot be written: a 400, and no trace left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentkit.engine.tools.workspace as workspace_module
from agentkit.errors import BadRequest
from agentkit.models.scripted import Step

from .conftest import ALICE, Env, settle

# Each passes the path-shape checks but cannot be written into a seeded workspace.
UNWRITABLE = {
    "part over 255 bytes": {"x" * 256: "1"},
    "multibyte part over 255 bytes": {"é" * 128: "1"},
    "file inside another": {"a": "1", "a/b": "2"},
    "file inside AGENTS.md": {"AGENTS.md/x": "1"},
    "file named .agentkit": {".agentkit": "1"},
    "file inside a seeded file": {"seed.txt/x": "1"},
}


@pytest.mark.parametrize("files", list(UNWRITABLE.values()), ids=list(UNWRITABLE))
async def test_a_start_with_unwritable_files_is_a_bad_request(
    env: Env, files: dict[str, str]
) -> None:
    rt = env.runtime([Step.text("ok")])
    with pytest.raises(BadRequest) as err:
        await rt.start_session("hi", principal=ALICE, workspace_files=files)
    assert err.value.status == 400 and err.value.code == "invalid_path"


@pytest.mark.parametrize("files", list(UNWRITABLE.values()), ids=list(UNWRITABLE))
async def test_a_rejected_start_leaves_no_session(env: Env, files: dict[str, str]) -> None:
    rt = env.runtime([Step.text("ok")])
    with pytest.raises(BadRequest):
        await rt.start_session("hi", principal=ALICE, workspace_files=files)
    assert (await rt.list_sessions(principal=ALICE)).items == []


@pytest.mark.parametrize("files", list(UNWRITABLE.values()), ids=list(UNWRITABLE))
async def test_a_follow_up_with_unwritable_files_is_a_bad_request(
    env: Env, files: dict[str, str]
) -> None:
    rt = env.runtime([Step.text("ok")])
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    with pytest.raises(BadRequest) as err:
        await rt.follow_up(
            acc.session_id, acc.continuation_token, "more", principal=ALICE, workspace_files=files
        )
    assert err.value.status == 400 and err.value.code == "invalid_path"


@pytest.mark.parametrize("files", list(UNWRITABLE.values()), ids=list(UNWRITABLE))
async def test_the_token_still_works_after_a_rejected_follow_up(
    env: Env, files: dict[str, str]
) -> None:
    rt = env.runtime([Step.text("ok"), Step.text("again")])
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)
    with pytest.raises(BadRequest):
        await rt.follow_up(
            acc.session_id, acc.continuation_token, "more", principal=ALICE, workspace_files=files
        )
    nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "retry", principal=ALICE)
    await settle(rt)
    assert nxt.session_id == acc.session_id


async def test_a_file_where_an_earlier_send_made_a_folder_is_a_bad_request(env: Env) -> None:
    rt = env.runtime([Step.text("ok"), Step.text("again")])
    acc = await rt.start_session("hi", principal=ALICE, workspace_files={"notes/todo.md": "-"})
    await settle(rt)
    with pytest.raises(BadRequest) as err:
        await rt.follow_up(
            acc.session_id,
            acc.continuation_token,
            "more",
            principal=ALICE,
            workspace_files={"notes": "x"},
        )
    assert err.value.code == "invalid_path"
    assert (rt.workspace(acc.session_id) / "notes/todo.md").read_text() == "-"


async def test_a_failed_write_gives_the_token_back(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = env.runtime([Step.text("ok"), Step.text("again")])
    acc = await rt.start_session("hi", principal=ALICE)
    await settle(rt)

    def refuse(root: Path, rel: str, text: str) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        # Seeding writes through the same function: seed first, then make writes fail.
        rt.prepare_workspace(acc.session_id, {})
        patched.setattr(workspace_module, "_write", refuse)
        with pytest.raises(BadRequest) as err:
            await rt.follow_up(
                acc.session_id,
                acc.continuation_token,
                "more",
                principal=ALICE,
                workspace_files={"fine.txt": "x"},
            )
    assert err.value.code == "invalid_path"
    nxt = await rt.follow_up(acc.session_id, acc.continuation_token, "retry", principal=ALICE)
    await settle(rt)
    assert nxt.session_id == acc.session_id


async def test_a_name_of_255_bytes_is_written(env: Env) -> None:
    rt = env.runtime([Step.text("ok")])
    name = "n" * 255
    acc = await rt.start_session("hi", principal=ALICE, workspace_files={name: "long"})
    await settle(rt)
    assert (rt.workspace(acc.session_id) / name).read_text() == "long"
