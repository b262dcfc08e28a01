"""Approving a parked call after its tool's input schema changed: 409 `schema_changed`,
never a run of the arguments the new tool no longer takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.engine.runtime import AgentRuntime
from agentkit.errors import Conflict
from agentkit.models.scripted import ScriptedModel, Step
from agentkit.project.bundle import AgentBundle
from agentkit.store.files import FileStore

from .conftest import ALICE, FILES, Env, settle, write_project
from .side_effects import deploy_calls
from .test_approvals import park

# The same agent, redeployed: `deploy` now takes a `target` where it took an `env`.
CHANGED = {
    **FILES,
    "agent/tools/deploy.py": FILES["agent/tools/deploy.py"].replace("env: str", "target: str"),
}


def redeployed(env: Env, tmp_path: Path, files: dict[str, str]) -> AgentRuntime:
    """A second runtime on the same state root, over a new build of the agent."""
    bundle = AgentBundle.discover(write_project(tmp_path / "v2" / "proj", files))
    assert not bundle.manifest.has_errors, bundle.manifest.diagnostics
    store = FileStore(env.state)
    env.stores.append(store)
    rt = AgentRuntime(
        bundle,
        store,
        model_resolver=lambda _id: ScriptedModel([Step.text("done")]),  # type: ignore[arg-type,return-value]
        state_root=env.state,
    )
    env.runtimes.append(rt)
    return rt


async def test_approving_a_call_whose_schema_changed_is_refused(env: Env, tmp_path: Path) -> None:
    if env.kind != "files":
        pytest.skip("a second runtime on the same state root needs the file store")
    sid, _ = await park(env)
    rt = redeployed(env, tmp_path, CHANGED)
    with pytest.raises(Conflict) as refused:
        await rt.resolve_approval(sid, "d1", "approve", principal=ALICE)
    assert refused.value.code == "schema_changed"
    assert "deploy" in str(refused.value) and "target" in str(refused.value)
    await settle(rt)
    assert deploy_calls(rt) == []  # the new tool never ran
    assert [p.call_id for p in await rt.approvals(sid, principal=ALICE)] == ["d1"]
    events = await rt.store.read(sid)
    assert not [e for e in events if e.type == "action.approval_resolved"]
    # It can still be denied.
    await rt.resolve_approval(sid, "d1", "deny", principal=ALICE)
    await settle(rt)
    assert await rt.approvals(sid, principal=ALICE) == []


async def test_a_call_whose_schema_did_not_change_is_approved_on_the_new_build(
    env: Env, tmp_path: Path
) -> None:
    if env.kind != "files":
        pytest.skip("a second runtime on the same state root needs the file store")
    sid, _ = await park(env)
    rt = redeployed(env, tmp_path, FILES)
    await rt.resolve_approval(sid, "d1", "approve", principal=ALICE)
    await settle(rt)
    assert deploy_calls(rt) == ["prod"]
