"""The error a parked call is closed with when its turn ends first says whether anyone had
approved it: the metrics of pending approvals count an undecided one only."""

from __future__ import annotations

from pathlib import Path

from agentkit.engine.folds.conversation import PendingCall, TurnState
from agentkit.engine.turn.closed_calls import ABANDONED, APPROVED_NOT_RUN, IN_DOUBT
from agentkit.engine.turn.ending import fail_turn
from agentkit.engine.turn.recorder import Recorder
from agentkit.sessions import SessionRecord, new_session_id
from agentkit.store.files import FileStore


async def test_a_turn_ended_from_outside_closes_each_open_call_with_what_happened(
    tmp_path: Path,
) -> None:
    store = FileStore(tmp_path)
    record = SessionRecord(id=new_session_id())
    await store.create_session(record)
    state = TurnState(turn_id="turn_1", started=True)
    state.pending = {
        "undecided": PendingCall("undecided", "wipe", {}, approval_requested=True),
        "approved": PendingCall(
            "approved", "wipe", {}, approval_requested=True, decision="approve"
        ),
        "running": PendingCall("running", "deploy", {}, started=True),
    }
    try:
        await fail_turn(Recorder(store, record, None, "turn_1"), state, "turn lost")
        events = await store.read(record.id)
    finally:
        await store.close()
    errors = {e.data["callId"]: e.data["error"] for e in events if e.type == "action.result"}
    assert errors == {"undecided": ABANDONED, "approved": APPROVED_NOT_RUN, "running": IN_DOUBT}
    assert events[-2].type == "turn.failed"
