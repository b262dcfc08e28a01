"""A real process killed (`kill -9`) while it compacts a conversation.

`python -m tests.engine.compaction_crash <project> <state> <session> <token>` sends one
follow-up to a session that has outgrown its window; the summary call touches
`<state>/summarizing` and then blocks, so the parent can kill the process mid-compaction
(the rotated continuation token is left in `<state>/token`). The session is in the file
store under `<state>`, or with `--dynamodb <endpoint> <sessions table> <events table>` in
DynamoDB tables on that (moto) server.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentkit.models.base import ModelChunk, ModelRequest
from agentkit.project.bundle import AgentBundle
from agentkit.store.base import Store
from agentkit.store.files import FileStore

from .long_chat import ALICE, WatchedModel, runtime, settle

ROOT = Path(__file__).resolve().parents[2]


class BlockingSummaries(WatchedModel):
    """Answers like the test model, but a summary call signals and then never returns."""

    def __init__(self, marker: Path) -> None:
        super().__init__()
        self.marker = marker

    def respond(self, request: ModelRequest) -> list[ModelChunk]:
        if not request.tools:
            self.marker.touch()
            time.sleep(600)  # killed here
        return super().respond(request)


def kill_mid_compaction(
    project: Path, state: Path, session_id: str, token: str, dynamodb: Any = None
) -> None:
    """Run the follow-up in a child and `kill -9` it once its summary call began (on the
    DynamoDB tables of `dynamodb`, a `DynamoDBSettings`, when given)."""
    marker = state / "summarizing"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    tables = (
        []
        if dynamodb is None
        else ["--dynamodb", dynamodb.endpoint_url, dynamodb.sessions_table, dynamodb.events_table]
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.engine.compaction_crash",
            str(project),
            str(state),
            session_id,
            token,
            *tables,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            if child.poll() is not None:
                err = child.stderr.read().decode() if child.stderr else ""
                raise AssertionError(f"the child ended before it compacted: {err}")
            assert time.monotonic() < deadline, "the child never started compacting"
            time.sleep(0.01)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        if child.stderr is not None:
            child.stderr.close()


def _store(state: Path, tables: list[str]) -> Store:
    if not tables:
        return FileStore(state)
    from agentkit.store.dynamodb import DynamoDBSettings, DynamoDBStore

    endpoint, sessions, events = tables[1:4]
    return DynamoDBStore(
        DynamoDBSettings(
            endpoint_url=endpoint,
            region="us-east-1",
            sessions_table=sessions,
            events_table=events,
        )
    )


async def _child(
    project: Path, state: Path, session_id: str, token: str, tables: list[str]
) -> None:
    model = BlockingSummaries(state / "summarizing")
    store = _store(state, tables)
    rt = runtime(AgentBundle.discover(project), store, state, model, lease_ttl=1.0)
    accepted = await rt.follow_up(session_id, token, "please lookup the crash", principal=ALICE)
    (state / "token").write_text(accepted.continuation_token)
    await settle(rt)
    # Reached only when the turn never compacted: say what it did instead.
    events = await store.read(session_id)
    lease = await store.get_lease(session_id)
    print([(e.type, e.data.get("error")) for e in events[-6:]], lease, file=sys.stderr)


if __name__ == "__main__":
    p, s, sid, tok = sys.argv[1:5]
    asyncio.run(_child(Path(p), Path(s), sid, tok, sys.argv[5:]))
