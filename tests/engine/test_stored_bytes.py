"""Storage grows with new content only: each turn of a long chat, compactions included,
adds about its own new content to the store (its message, its 3 KB tool result, its reply
and their envelopes), never a copy of the history, on the file store and on DynamoDB (the
moto server; the bytes are DynamoDB's own measure of each item)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentkit.store.base import Store
from agentkit.store.files import FileStore

from .long_chat import RESULT_BYTES, Chat, chat, close, of_type, runtime, write_agent


def stored_bytes(store: Any, session_id: str, dynamodb_client: Any = None) -> int:
    if isinstance(store, FileStore):
        files = [*Path(store.events_path(session_id)).parent.rglob("*")]
        files += [*store.blobs.folder.rglob("*")]
        return sum(p.stat().st_size for p in files if p.is_file())
    from agentkit.store._dynamo_codec import item_size

    pages = dynamodb_client.get_paginator("query").paginate(
        TableName=store.settings.events_table,
        KeyConditionExpression="sessionId = :s",
        ExpressionAttributeValues={":s": {"S": session_id}},
    )
    return sum(item_size(item) for page in pages for item in page["Items"])


@pytest.mark.slow(reason="a chat long enough to compact, measured after every turn")
@pytest.mark.timeout(300)
@pytest.mark.parametrize(("kind", "turns"), [("files", 16), ("dynamodb", 8)])
async def test_each_turn_stores_about_its_new_content(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str, turns: int
) -> None:
    client = None
    if kind == "files":
        store: Store = FileStore(tmp_path / "state")
    else:
        store = request.getfixturevalue("dynamodb_store_factory")()
        client = request.getfixturevalue("dynamodb_client")
    rt = runtime(write_agent(tmp_path / "proj"), store, tmp_path / "state")
    grown: list[int] = []
    try:
        on: Chat = await chat(rt, 1)
        before = stored_bytes(store, on.session_id, client)
        for _ in range(turns - 1):
            await chat(rt, 1, on)
            after = stored_bytes(store, on.session_id, client)
            grown.append(after - before)
            before = after
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert of_type(events, "context.compacted"), "the chat never compacted"
    # About 6.8 KB a turn on either store: the 3 KB result once, and 13 small envelopes. The
    # history passes 10 KB within two turns; a turn that re-stored it would show.
    assert max(grown) < 3 * RESULT_BYTES
    assert max(grown) < 1.6 * min(grown)
