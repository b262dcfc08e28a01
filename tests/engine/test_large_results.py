"""A tool that returns 5 MB on DynamoDB: the turn completes, every item stays far from
DynamoDB's 400 KB limit, readers of the stream get the whole result, and the model sees a
shortened copy (a DynamoDB-API server, moto, over HTTP)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentkit.models.base import ToolResultMessage
from agentkit.project.bundle import AgentBundle

from .long_chat import WatchedModel, chat, close, of_type, runtime

RESULT_BYTES = 5 * 1024 * 1024
ITEM_LIMIT = 400 * 1024


def write_dumper(root: Path) -> AgentBundle:
    files = {
        "agent/instructions.md": "You dump things.\n",
        "agent/agent.py": "from agentkit import define_agent\nagent = define_agent(max_steps=4)\n",
        "agent/tools/lookup.py": f"""
            from pydantic import BaseModel
            from agentkit import define_tool

            class LookupInput(BaseModel):
                query: str

            @define_tool(description="Dump a very large report.")
            def lookup(input: LookupInput, ctx) -> str:
                return ("0123456789abcdef" * ({RESULT_BYTES} // 16))
        """,
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return AgentBundle.discover(root)


@pytest.mark.slow(reason="5 MB through a moto server that answers one request at a time")
@pytest.mark.timeout(600)
async def test_a_5_mb_tool_result_on_dynamodb(
    tmp_path: Path, dynamodb_store_factory: Any, dynamodb_client: Any
) -> None:
    store = dynamodb_store_factory()
    model = WatchedModel()
    rt = runtime(write_dumper(tmp_path / "proj"), store, tmp_path / "state", model)
    try:
        on = await chat(rt, 1)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert [e.type for e in events if e.type.startswith("turn.")][-1] == "turn.completed"
    (result,) = of_type(events, "action.result")
    assert len(result.data["result"]) == RESULT_BYTES
    shown = model.requests[-1].messages[-1]
    assert isinstance(shown, ToolResultMessage) and len(shown.content) < RESULT_BYTES // 20
    pages = dynamodb_client.get_paginator("scan").paginate(
        TableName=store.settings.events_table, ReturnConsumedCapacity="NONE"
    )
    sizes = [
        sum(
            len(k) + len(v.get("B", b"")) + len(str(v.get("S", v.get("N", ""))))
            for k, v in item.items()
        )
        for page in pages
        for item in page["Items"]
    ]
    assert max(sizes) < 0.8 * ITEM_LIMIT
