"""`Session.fork(at_index)`: a new session from a prefix of this one, over HTTP."""

from __future__ import annotations

from agentkit.client import AsyncClient, Client
from tests.fixtures.http_server import Served


def test_a_fork_goes_on_by_itself_and_leaves_the_original_alone(shared_server: Served) -> None:
    with Client(shared_server.url) as client:
        session = client.start("What is the weather in Paris?")
        original = session.wait(timeout=60)
        recorded = client.dump(session.id)
        fork = session.fork(recorded[-1].index)
        assert fork.id != session.id
        copied = client.dump(fork.id)
        assert copied[0].type == "session.forked"
        assert [e.type for e in copied[1:]] == [e.type for e in recorded]
        fork.send("And in Porto?")
        assert "Porto" in fork.reply_text(timeout=60)
        assert client.dump(session.id) == recorded
        assert original


async def test_a_call_parked_at_the_cut_is_approved_in_the_fork(shared_server: Served) -> None:
    async with AsyncClient(shared_server.url) as client:
        session = await client.start("wipe the notes folder")
        await session.wait(timeout=60)
        recorded = await client.dump(session.id)
        asked = next(e.index for e in recorded if e.type == "action.approval_requested")
        fork = await session.fork(asked)
        [pending] = await fork.pending_approvals()
        await fork.approve(pending.call_id)
        async for event in fork.events():
            if event.type == "turn.completed":
                assert "wiped" in event.data["result"]
                break
        # The original still waits on its own decision.
        assert [p.call_id for p in await session.pending_approvals()] == [pending.call_id]
