"""Long conversations stay inside the model's context window (docs/engine.md, Compaction).

The chats run the offline `test` model on a declared 4,000-token window, which it enforces
as a real provider does, over the file store and the DynamoDB store (a moto server).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agentkit.engine.folds.conversation import fold_conversation
from agentkit.events import Event
from agentkit.models.base import ToolResultMessage, UserMessage
from agentkit.sessions import SessionStatus, fold_status
from agentkit.store.base import Store
from agentkit.store.files import FileStore

from .long_chat import (
    RESULT_BYTES,
    WatchedModel,
    chat,
    close,
    of_type,
    runtime,
    settle,
    unpaired_calls,
    write_agent,
)

WINDOW = 4000


@pytest.fixture(params=["files", "dynamodb"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    made: Store = (
        FileStore(tmp_path / "state")
        if request.param == "files"
        else request.getfixturevalue("dynamodb_store_factory")()
    )
    yield made
    await made.close()


def turn_ends(events: list[Event]) -> list[str]:
    return [e.type for e in events if e.type in ("turn.completed", "turn.failed")]


# moto answers one request at a time, so 200 turns on DynamoDB take minutes: the default
# suite runs 8 there (two compactions), the bench run (-m bench) the full 200.
@pytest.mark.slow(reason="hundreds of turns, the shape the issue names")
@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("kind", "turns"),
    [
        ("files", 200),
        ("dynamodb", 8),
        pytest.param("dynamodb", 200, marks=pytest.mark.bench),
    ],
)
async def test_hundreds_of_follow_ups_with_3_kb_results_all_complete(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str, turns: int
) -> None:
    store: Store = (
        FileStore(tmp_path / "state")
        if kind == "files"
        else request.getfixturevalue("dynamodb_store_factory")()
    )
    bundle = write_agent(tmp_path / "proj")
    model = WatchedModel()
    rt = runtime(bundle, store, tmp_path / "state", model)
    try:
        on = await chat(rt, turns)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert turn_ends(events) == ["turn.completed"] * turns
    compacted = of_type(events, "context.compacted")
    assert len(compacted) >= turns // 5
    assert all(e.data["strategy"] == "summarize" and e.data["summary"] for e in compacted)
    assert all(e.data["tokensAfter"] < e.data["tokensBefore"] for e in compacted)
    assert model.largest_request() <= WINDOW
    for request in model.requests:
        assert unpaired_calls(request.messages) == []
    # Every tool result was recorded whole, whatever the model was shown.
    results = of_type(events, "action.result")
    assert len(results) == turns and all(len(e.data["result"]) == RESULT_BYTES for e in results)


async def test_compaction_off_ends_the_turn_with_context_exceeded(
    tmp_path: Path, store: Store
) -> None:
    bundle = write_agent(tmp_path / "proj", compaction="off")
    model = WatchedModel()
    rt = runtime(bundle, store, tmp_path / "state", model)
    try:
        on = await chat(rt, 8)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
    ends = turn_ends(events)
    assert ends[:3] == ["turn.completed"] * 3 and ends[-1] == "turn.failed"
    failed = of_type(events, "turn.failed")[-1]
    assert failed.data["error"].startswith("context_exceeded: ")
    assert "4000" in failed.data["error"]
    assert of_type(events, "context.compacted") == []
    assert model.largest_request() <= WINDOW  # the engine stopped it before it was sent
    assert fold_status(events) == SessionStatus.IDLE  # the session still takes messages


async def test_the_summary_call_counts_in_the_turn_usage(tmp_path: Path) -> None:
    bundle = write_agent(tmp_path / "proj")
    store = FileStore(tmp_path / "state")
    model = WatchedModel()
    rt = runtime(bundle, store, tmp_path / "state", model)
    try:
        on = await chat(rt, 6)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    first = of_type(events, "context.compacted")[0]
    steps = [e for e in of_type(events, "step.completed") if e.turn_id == first.turn_id]
    (done,) = [e for e in of_type(events, "turn.completed") if e.turn_id == first.turn_id]
    step_input = sum(s.data["usage"]["inputTokens"] for s in steps)
    summary_input = first.data["usage"]["inputTokens"]
    assert summary_input > 0
    assert done.data["usage"]["inputTokens"] == step_input + summary_input


async def test_a_failed_summary_falls_back_to_the_window_once(tmp_path: Path) -> None:
    bundle = write_agent(tmp_path / "proj")
    store = FileStore(tmp_path / "state")
    model = WatchedModel(fail_summaries=True)
    rt = runtime(bundle, store, tmp_path / "state", model)
    try:
        on = await chat(rt, 12)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert turn_ends(events) == ["turn.completed"] * 12
    compacted = of_type(events, "context.compacted")
    assert compacted and all(e.data["strategy"] == "window" for e in compacted)
    assert all("summarizer is down" in e.data["summaryError"] for e in compacted)
    assert "summary" not in compacted[0].data and "usage" not in compacted[0].data
    summary_calls = [r for r in model.requests if not r.tools]
    assert len(summary_calls) == len(compacted)  # one try per compaction, never a loop


async def test_a_compaction_model_writes_the_summary(tmp_path: Path) -> None:
    bundle = write_agent(tmp_path / "proj", compaction_model="openai:gpt-4o-mini")
    store = FileStore(tmp_path / "state")
    agent, summarizer = WatchedModel(), WatchedModel()
    models: dict[str | None, Any] = {"openai:gpt-4o-mini": summarizer}
    rt = runtime(bundle, store, tmp_path / "state", resolver=lambda mid: models.get(mid, agent))
    try:
        on = await chat(rt, 6)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert of_type(events, "context.compacted")
    assert summarizer.requests and all(not r.tools for r in summarizer.requests)
    assert all(r.tools for r in agent.requests)


async def test_the_window_strategy_drops_whole_turns(tmp_path: Path) -> None:
    bundle = write_agent(tmp_path / "proj", compaction="window")
    store = FileStore(tmp_path / "state")
    model = WatchedModel()
    rt = runtime(bundle, store, tmp_path / "state", model)
    try:
        on = await chat(rt, 20)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert turn_ends(events) == ["turn.completed"] * 20
    compacted = of_type(events, "context.compacted")
    assert compacted and all(e.data["strategy"] == "window" for e in compacted)
    assert [r for r in model.requests if not r.tools] == []  # no summary call at all
    last = model.requests[-1].messages
    assert isinstance(last[0], UserMessage) and "dropped" in last[0].text
    assert unpaired_calls(last) == []


async def test_the_current_turn_is_never_compacted_away(tmp_path: Path) -> None:
    # One result larger than the window, shown whole: nothing before it to compact.
    bundle = write_agent(tmp_path / "proj", context_window=600, max_tool_result_tokens=5000)
    store = FileStore(tmp_path / "state")
    rt = runtime(bundle, store, tmp_path / "state")
    try:
        on = await chat(rt, 1)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert of_type(events, "context.compacted") == []
    (failed,) = of_type(events, "turn.failed")
    assert "nothing before the current turn" in failed.data["error"]


async def test_a_large_tool_result_is_shortened_for_the_model_only(tmp_path: Path) -> None:
    bundle = write_agent(tmp_path / "proj", max_tool_result_tokens=100)
    store = FileStore(tmp_path / "state")
    model = WatchedModel()
    rt = runtime(bundle, store, tmp_path / "state", model)
    try:
        on = await chat(rt, 1)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    (result,) = of_type(events, "action.result")
    assert len(result.data["result"]) == RESULT_BYTES
    shown = model.requests[-1].messages[-1]
    assert isinstance(shown, ToolResultMessage)
    assert len(shown.content) <= 400
    assert "result shortened for the model: 3000 characters" in shown.content


async def test_a_fresh_process_folds_the_same_compacted_conversation(tmp_path: Path) -> None:
    bundle = write_agent(tmp_path / "proj")
    state = tmp_path / "state"
    store = FileStore(state)
    rt = runtime(bundle, store, state)
    try:
        on = await chat(rt, 10)
        events = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert of_type(events, "context.compacted")
    # The stream read afresh (another invocation) folds to the conversation this one had.
    assert fold_conversation(iter(events)) == fold_conversation(events)
    # And a new runtime on the same state carries on from the recorded compaction.
    again = FileStore(state)
    model = WatchedModel()
    rt2 = runtime(bundle, again, state, model)
    try:
        await chat(rt2, 3, on)
        events = list(await again.read(on.session_id))
    finally:
        await close(rt2)
        await again.close()
    assert turn_ends(events) == ["turn.completed"] * 13
    first = model.requests[0].messages[0]
    assert isinstance(first, UserMessage) and first.text.startswith("Summary of the earlier")
    assert model.largest_request() <= WINDOW


async def wait_lease_free(store: Store, session_id: str) -> None:
    deadline = time.monotonic() + 30
    while await store.get_lease(session_id) is not None:
        assert time.monotonic() < deadline, "the dead process's lease never expired"
        await asyncio.sleep(0.05)


@pytest.mark.slow(reason="a child process killed mid-compaction, then a restart")
@pytest.mark.parametrize("kind", ["files", "dynamodb"])
async def test_a_kill_mid_compaction_loses_nothing_and_the_next_turn_compacts(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str
) -> None:
    from .compaction_crash import kill_mid_compaction

    project, state = tmp_path / "proj", tmp_path / "state"
    state.mkdir()
    if kind == "files":
        tables = None
        reopen: Callable[[], Store] = lambda: FileStore(state)  # noqa: E731
    else:
        factory = request.getfixturevalue("dynamodb_store_factory")
        first = factory()
        tables = first.settings
        await first.close()
        reopen = lambda: factory(settings=tables)  # noqa: E731
    bundle = write_agent(project)
    store = reopen()
    rt = runtime(bundle, store, state)
    try:
        on = await chat(rt, 3)  # just under the window: the next turn must compact
        before = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert of_type(before, "context.compacted") == []
    await asyncio.to_thread(kill_mid_compaction, project, state, on.session_id, on.token, tables)
    store = reopen()
    await wait_lease_free(store, on.session_id)
    model = WatchedModel()
    rt = runtime(bundle, store, state, model)
    try:
        await rt.recover()  # the next start: the killed turn is ended or run again
        await settle(rt)
        crashed = list(await store.read(on.session_id))
        assert crashed[: len(before)] == before  # nothing recorded before the kill is lost
        assert [e.index for e in crashed] == list(range(len(crashed)))
        assert fold_status(crashed) == SessionStatus.IDLE
        kill_index = len(crashed)
        on.token = (state / "token").read_text()
        await chat(rt, 1, on)
        after = list(await store.read(on.session_id))
    finally:
        await close(rt)
        await store.close()
    assert turn_ends(after)[-1] == "turn.completed"
    assert [e for e in of_type(after, "context.compacted") if e.index >= kill_index]
    assert model.largest_request() <= WINDOW
