"""A tool that returns 5 MB, on the file store and on DynamoDB with S3 (a moto server over
HTTP): the turn completes, the result is stored once as a blob and the stream holds only a
small reference (no DynamoDB item comes near its 400 KB limit), every reader of the stream
gets the whole result, and the model sees a shortened copy."""

from __future__ import annotations

import contextlib
import io
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentkit.models.base import ToolResultMessage
from agentkit.project.bundle import AgentBundle
from agentkit.store.blobs import LARGE_PAYLOAD_BYTES

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


async def run_dumper(tmp_path: Path, store: Any) -> tuple[str, list[Any], WatchedModel]:
    model = WatchedModel()
    rt = runtime(write_dumper(tmp_path / "proj"), store, tmp_path / "state", model)
    try:
        on = await chat(rt, 1)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
    assert [e.type for e in events if e.type.startswith("turn.")][-1] == "turn.completed"
    (result,) = of_type(events, "action.result")
    assert len(result.data["result"]) == RESULT_BYTES
    shown = model.requests[-1].messages[-1]
    assert isinstance(shown, ToolResultMessage) and len(shown.content) < RESULT_BYTES // 20
    return on.session_id, events, model


@pytest.mark.slow(reason="5 MB through a tool, the stream and the store")
async def test_a_5_mb_tool_result_on_the_file_store(tmp_path: Path) -> None:
    from agentkit.cli.trajectory import register
    from agentkit.store.files import FileStore

    store = FileStore(tmp_path / "state")
    try:
        session_id, events, _ = await run_dumper(tmp_path, store)
        assert store.blobs.count() == 1
        assert await FileStore(tmp_path / "state").read(session_id) == events
    finally:
        await store.close()
    events_file = store.events_path(session_id)
    lines = events_file.read_bytes().splitlines()
    assert max(len(line) for line in lines) < LARGE_PAYLOAD_BYTES
    (blob,) = (p for p in (tmp_path / "state" / "blobs").rglob("*") if p.is_file())
    assert len(blob.relative_to(tmp_path / "state").parts) == 4  # blobs/sha256/ab/cdef…
    assert json.loads(blob.read_bytes()) == "0123456789abcdef" * (RESULT_BYTES // 16)

    # `agentkit trajectory --events` on the session's own file reads the blob back.
    import argparse

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["trajectory", "--events", str(events_file), "--json"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert args.func(args) == 0
    (call,) = json.loads(out.getvalue())["toolCalls"]
    assert len(call["result"]) == RESULT_BYTES


@pytest.mark.slow(reason="5 MB through a moto server that answers one request at a time")
@pytest.mark.timeout(600)
async def test_a_5_mb_tool_result_on_dynamodb_goes_to_s3(
    tmp_path: Path,
    dynamodb_store_factory: Any,
    dynamodb_client: Any,
    s3_client: Any,
    s3_bucket: str,
) -> None:
    from agentkit.store import _dynamo_codec as codec
    from agentkit.store._s3blobs import S3Blobs
    from agentkit.store.dynamodb import read_stream_event

    blobs = S3Blobs(s3_client, s3_bucket)
    store = dynamodb_store_factory(blobs=blobs)
    try:
        session_id, events, _ = await run_dumper(tmp_path, store)
    finally:
        await store.close()
    pages = dynamodb_client.get_paginator("scan").paginate(
        TableName=store.settings.events_table, ReturnConsumedCapacity="NONE"
    )
    items = [item for page in pages for item in page["Items"]]
    assert max(codec.item_size(item) for item in items) < LARGE_PAYLOAD_BYTES + 4096
    assert max(codec.item_size(item) for item in items) < ITEM_LIMIT // 4
    (obj,) = s3_client.list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert obj["Key"].startswith("blobs/sha256/") and obj["Size"] > RESULT_BYTES
    # The hooks' stream consumer reads the event from its stream image, result and all.
    images = sorted(
        (i for i in items if codec.get_s(i, "sessionId") == session_id),
        key=codec.item_index,
    )
    streamed = [
        read_stream_event(dynamodb_client, store.settings.events_table, i, blobs) for i in images
    ]
    assert streamed == events
