"""`ctx.idempotency_key`: one key per call, the same wherever the call runs."""

from __future__ import annotations

from pathlib import Path

from agentkit.authoring.contexts import HostServices, SessionInfo, ToolContext
from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.runtime import AgentRuntime
from agentkit.models.scripted import ScriptedModel, Step, call
from agentkit.project.bundle import AgentBundle
from agentkit.store.memory import MemoryStore

from .conftest import ALICE, FILES, settle, write_project

CHARGE = """
    from pydantic import BaseModel
    from agentkit import ToolContext, define_tool

    class ChargeInput(BaseModel):
        cents: int

    @define_tool(description="Charge a card.")
    async def charge(input: ChargeInput, ctx: ToolContext) -> dict:
        return {"key": ctx.idempotency_key}
"""


def context(session_id: str | None, call_id: str, workdir: Path) -> ToolContext:
    session = SessionInfo(id=session_id, channel_id="http") if session_id else None
    return ToolContext(
        session=session, host=HostServices(), call_id=call_id, tool_name="charge", workdir=workdir
    )


def test_the_key_depends_only_on_the_session_and_the_call(tmp_path: Path) -> None:
    first = context("ses_a", "c1", tmp_path / "one").idempotency_key
    assert context("ses_a", "c1", tmp_path / "two").idempotency_key == first  # another process
    assert context("ses_a", "c2", tmp_path / "one").idempotency_key != first
    assert context("ses_b", "c1", tmp_path / "one").idempotency_key != first
    assert context(None, "c1", tmp_path / "one").idempotency_key != first
    assert first.startswith("agentkit-") and len(first) == len("agentkit-") + 40


async def test_each_call_of_a_turn_gets_its_own_key(tmp_path: Path) -> None:
    project = write_project(tmp_path / "proj", {**FILES, "agent/tools/charge.py": CHARGE})
    model = ScriptedModel(
        [
            Step.tool_calls(
                call("charge", {"cents": 100}, id="c1"), call("charge", {"cents": 100}, id="c2")
            ),
            Step.text("charged"),
        ]
    )
    rt = AgentRuntime(
        AgentBundle.discover(project), MemoryStore(), model_resolver=lambda _id: model,
        state_root=tmp_path / "state",
    )  # fmt: skip
    try:
        acc = await rt.start_session("charge twice", principal=ALICE)
        await settle(rt)
        results = {
            e.data["callId"]: e.data["result"]["key"]
            for e in await rt.store.read(acc.session_id)
            if e.type == "action.result"
        }
        assert results == {
            cid: context(acc.session_id, cid, tmp_path).idempotency_key for cid in ("c1", "c2")
        }
    finally:
        dispatcher = rt.dispatcher
        assert isinstance(dispatcher, LocalDispatcher)
        await dispatcher.close()
