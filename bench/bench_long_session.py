"""A long session on a fixed window: does a turn cost the same at turn 1,000 as at turn 10?

One chat session of `--turns` follow-ups, each of which makes the offline `test` model call
a tool that returns `--result-kb` KB, on a declared `--window`-token context window with
the default compaction (`summarize`). The model answers at once, so a turn's wall time is
the engine's own overhead: folding, compacting, recording. Printed per store (the file
store, and DynamoDB on a local moto server with `--dynamo-turns` turns, since moto answers
one request at a time and slows down as a table grows):

- the engine's time per turn around turn 10 and around the last turn, and their ratio
  (goal: the last at most 1.5x turn 10);
- the largest request sent, in estimated tokens, against the window;
- the bytes the store holds for the session against the bytes of new content (messages,
  tool results, replies), blobs included: with `--large-every N`, every Nth tool result is
  `--large-kb` KB, over the 64 KB at which a payload is stored once as a blob (files under
  the state folder; S3 beside DynamoDB);
- the time to replay the whole session (read every event, fold the conversation afresh),
  by the store that ran the turns and by one just opened.

Nothing is asserted: the numbers are printed.

    python bench/bench_long_session.py [--turns 1000] [--dynamo-turns 100] [--window 32000]
        [--result-kb 5] [--large-every 0] [--large-kb 256]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from agentkit.engine.dispatch import LocalDispatcher
from agentkit.engine.folds.conversation import fold_conversation
from agentkit.engine.runtime import AgentRuntime
from agentkit.models.base import ModelChunk, ModelRequest
from agentkit.models.test import TestModel
from agentkit.models.windows import request_tokens
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal
from agentkit.store.base import Store

OWNER = Principal("bench")
GOAL_RATIO = 1.5


class Measured(TestModel):
    """The test model, keeping the largest request it was sent."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def respond(self, request: ModelRequest) -> list[ModelChunk]:
        self.largest = max(self.largest, request_tokens(request))
        return super().respond(request)


def write_agent(
    root: Path, window: int, result_bytes: int, large_every: int = 0, large_bytes: int = 0
) -> AgentBundle:
    files = {
        "agent/instructions.md": "You look things up.\n",
        "agent/agent.py": f"""
            from agentkit import define_agent
            agent = define_agent(max_steps=4, context_window={window})
        """,
        "agent/tools/lookup.py": f"""
            from pydantic import BaseModel
            from agentkit import define_tool

            class LookupInput(BaseModel):
                query: str

            @define_tool(description="Look something up.")
            def lookup(input: LookupInput, ctx) -> str:
                line = "report on " + input.query + ": " + "lorem ipsum " * 20
                n = int(input.query.rsplit(" ", 1)[-1]) if input.query[-1:].isdigit() else 1
                if {large_every} and n % {large_every} == 0:
                    return (line * ({large_bytes} // len(line) + 1))[:{large_bytes}]
                return (line * 100)[:{result_bytes}]
        """,
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return AgentBundle.discover(root)


async def run(
    store: Store,
    state: Path,
    bundle: AgentBundle,
    turns: int,
    stored_bytes: Callable[[str], int],
    reopen: Callable[[], Store],
) -> dict[str, Any]:
    model = Measured()
    rt = AgentRuntime(bundle, store, model_resolver=lambda _id: model, state_root=state)
    dispatcher = rt.dispatcher
    assert isinstance(dispatcher, LocalDispatcher)
    times: list[float] = []
    started = time.perf_counter()
    acc = await rt.start_session("please lookup topic 0", principal=OWNER)
    await dispatcher.drain()
    times.append(time.perf_counter() - started)
    token = acc.continuation_token
    for n in range(1, turns):
        started = time.perf_counter()
        nxt = await rt.follow_up(acc.session_id, token, f"please lookup topic {n}", principal=OWNER)
        await dispatcher.drain()
        times.append(time.perf_counter() - started)
        token = nxt.continuation_token
    began = time.perf_counter()
    events = list(await store.read(acc.session_id))
    fold_conversation(iter(events))
    replay = time.perf_counter() - began
    # The same through a store that has read nothing yet (a new process, a cold Lambda).
    cold = reopen()
    began = time.perf_counter()
    fold_conversation(iter(list(await cold.read(acc.session_id))))
    replay_cold = time.perf_counter() - began
    await cold.close()
    new_content = sum(
        len(str(e.data.get(key, "")).encode())
        for e in events
        for key in ("message", "result", "text")
        if e.type in ("message.received", "action.result", "message.completed")
    )
    await dispatcher.close()
    return {
        "early": statistics.median(times[5:15]) if len(times) >= 15 else times[-1],
        "late": statistics.median(times[-10:]),
        "largest": model.largest,
        "stored": stored_bytes(acc.session_id),
        "new": new_content,
        "replay": replay,
        "replay_cold": replay_cold,
        "compactions": sum(1 for e in events if e.type == "context.compacted"),
        "events": len(events),
    }


def report(name: str, turns: int, window: int, r: dict[str, Any]) -> None:
    ratio = r["late"] / r["early"] if r["early"] else float("nan")
    verdict = "meets" if ratio <= GOAL_RATIO else "misses"
    print(f"\n{name}: {turns} turns, {r['events']} events, {r['compactions']} compactions")
    print(f"  engine per turn, turn ~10:        {r['early'] * 1000:8.1f} ms")
    print(f"  engine per turn, last 10 turns:   {r['late'] * 1000:8.1f} ms")
    print(f"  ratio (goal <= {GOAL_RATIO}x):             {ratio:8.2f}x  ({verdict} the goal)")
    print(f"  largest request:                  {r['largest']:8d} tokens (window {window})")
    print(
        f"  bytes stored / new content:       {r['stored']:8d} / {r['new']} B"
        f" = {r['stored'] / max(1, r['new']):.2f}x"
    )
    print(f"  replay of the whole session:      {r['replay'] * 1000:8.1f} ms")
    print(f"  the same by a store just opened:  {r['replay_cold'] * 1000:8.1f} ms")


async def files_store(args: argparse.Namespace, tmp: Path) -> None:
    from agentkit.store.files import FileStore

    state = tmp / "files-state"
    store = FileStore(state)
    bundle = write_agent(tmp / "proj", *agent_sizes(args))

    def stored(session_id: str) -> int:
        # The bench's one session owns every blob of the state folder.
        files = [*store.session_dir(session_id).rglob("*"), *store.blobs.folder.rglob("*")]
        return sum(p.stat().st_size for p in files if p.is_file())

    try:
        result = await run(store, state, bundle, args.turns, stored, lambda: FileStore(state))
    finally:
        await store.close()
    report("file store", args.turns, args.window, result)


def agent_sizes(args: argparse.Namespace) -> tuple[int, int, int, int]:
    return (args.window, args.result_kb * 1024, args.large_every, args.large_kb * 1024)


async def dynamodb_store(args: argparse.Namespace, tmp: Path) -> None:
    import boto3

    from agentkit.emulator.moto_server import start_moto, stop_moto
    from agentkit.store._dynamo_codec import item_size
    from agentkit.store._s3blobs import S3Blobs
    from agentkit.store.dynamodb import DynamoDBSettings, DynamoDBStore, create_tables, make_client

    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ.setdefault(key, value)  # moto takes any credentials; botocore wants some
    url, proc = start_moto()
    try:
        settings = DynamoDBSettings(
            endpoint_url=url,
            region="us-east-1",
            sessions_table="bench-sessions",
            events_table="bench-events",
        )
        client = make_client(settings)
        create_tables(client, settings)
        s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=url)
        s3.create_bucket(Bucket="bench-blobs")
        store = DynamoDBStore(settings, client=client, blobs=S3Blobs(s3, "bench-blobs"))
        bundle = write_agent(tmp / "proj-ddb", *agent_sizes(args))

        def stored(session_id: str) -> int:
            # DynamoDB's own measure of each item, plus the S3 objects of the blobs.
            total = 0
            pages = client.get_paginator("scan").paginate(TableName=settings.events_table)
            for page in pages:
                total += sum(item_size(item) for item in page["Items"])
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket="bench-blobs"):
                total += sum(obj["Size"] for obj in page.get("Contents", []))
            return total

        try:
            result = await run(
                store,
                tmp / "ddb-state",
                bundle,
                args.dynamo_turns,
                stored,
                lambda: DynamoDBStore(settings, blobs=S3Blobs(s3, "bench-blobs")),
            )
        finally:
            await store.close()
            client.close()
            s3.close()
        report("DynamoDB (moto)", args.dynamo_turns, args.window, result)
    finally:
        stop_moto(proc)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        jobs: list[Callable[[argparse.Namespace, Path], Awaitable[None]]] = [files_store]
        if args.dynamo_turns > 0:
            jobs.append(dynamodb_store)
        for job in jobs:
            await job(args, Path(tmp))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--dynamo-turns", type=int, default=100)
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--result-kb", type=int, default=5)
    parser.add_argument("--large-every", type=int, default=0, help="every Nth result is large")
    parser.add_argument("--large-kb", type=int, default=256)
    asyncio.run(main(parser.parse_args()))
