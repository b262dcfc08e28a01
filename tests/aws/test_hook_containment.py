"""HooksFunction with a hook whose typed handler calls `sys.exit()`: the stream batch is
acknowledged, the hook's wildcard handler and the other hooks still hear every event, and
the function's event loop keeps serving the next batch."""

from __future__ import annotations

import sys
from typing import Any

from agentkit import HookContext, define_hook
from agentkit.aws.handlers import _common, hooks
from agentkit.events import Event
from agentkit.hooks import NamedHook
from tests.aws.conftest import FakeContext, Stack, load_event


def test_a_hook_that_exits_does_not_silence_the_others(aws_stack: Stack) -> None:
    seen: list[tuple[int, str]] = []

    def exits(event: Event, ctx: HookContext) -> None:
        sys.exit(1)

    def every(event: Event, ctx: HookContext) -> None:
        seen.append((event.index, event.type))

    fragile = NamedHook("fragile", define_hook(events={"turn.completed": exits, "*": every}))
    loaded: list[Any] = aws_stack.host.hooks()
    aws_stack.host._hooks = [fragile, *loaded]

    batch = load_event("hooks/stream-batch.json")
    for _ in range(2):  # a second batch on the same loop: nothing was torn down
        assert hooks.handler(batch, FakeContext()) == {"batchItemFailures": []}
    types = ["session.started", "message.received", "turn.started", "turn.completed"]
    assert seen == [(i, t) for i, t in enumerate(types)] * 2
    observed = aws_stack.hook_calls()  # the bundle's own hook, after the failing one
    assert [c["index"] for c in observed] == [0, 1, 2, 3] * 2
    assert not _common.loop().is_closed()
