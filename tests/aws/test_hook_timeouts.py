"""HooksFunction with hung handlers: a hook whose `turn.completed` handler never returns
(async, or sync in the hooks' thread pool) times out on that event only; its wildcard
handler and the bundle's own hook still hear every event of the real stream batch, and the
batch is acknowledged."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agentkit import HookContext, define_hook
from agentkit.aws.handlers import hooks
from agentkit.events import Event
from agentkit.hooks import NamedHook
from tests.aws.conftest import FakeContext, Stack, load_event

TYPES = ["session.started", "message.received", "turn.started", "turn.completed"]


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    gate = threading.Event()
    yield gate
    gate.set()  # the abandoned sync threads return


def hung_async() -> Any:
    async def hangs(event: Event, ctx: HookContext) -> None:
        await asyncio.Event().wait()

    return hangs


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_hung_handler_does_not_hold_up_the_stream(
    aws_stack: Stack, gate: threading.Event, kind: str
) -> None:
    seen: list[tuple[int, str]] = []

    def hangs_sync(event: Event, ctx: HookContext) -> None:
        gate.wait(timeout=120)

    def every(event: Event, ctx: HookContext) -> None:
        seen.append((event.index, event.type))

    hung = hung_async() if kind == "async" else hangs_sync
    stuck = NamedHook(
        "stuck", define_hook(events={"turn.completed": hung, "*": every}, timeout=0.2)
    )
    loaded: list[Any] = aws_stack.host.hooks()
    aws_stack.host._hooks = [stuck, *loaded]

    batch = load_event("hooks/stream-batch.json")
    for _ in range(2):  # the next batch is not blocked by the first one's hung call
        assert hooks.handler(batch, FakeContext()) == {"batchItemFailures": []}
    assert seen == [(i, t) for i, t in enumerate(TYPES)] * 2
    observed = aws_stack.hook_calls()  # the bundle's own hook, after the stuck one
    assert [c["index"] for c in observed] == [0, 1, 2, 3] * 2
