"""Hooks on a real runtime: after the record, in order, never fatal, never in the way."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path
from typing import Any

from agentkit import HookContext, define_hook
from agentkit.engine.runtime import AgentRuntime
from agentkit.events import Event
from agentkit.hooks import LocalHookFanout, NamedHook
from agentkit.project.bundle import AgentBundle
from agentkit.sessions import Principal
from agentkit.store.memory import MemoryStore

ALICE = Principal("alice")


def project(tmp_path: Path, hook_source: str | None = None) -> AgentBundle:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "instructions.md").write_text("You are a test agent.\n")
    if hook_source is not None:
        (agent / "hooks").mkdir()
        (agent / "hooks" / "audit.py").write_text(textwrap.dedent(hook_source))
    bundle = AgentBundle.discover(tmp_path)
    assert not bundle.manifest.has_errors, bundle.manifest.diagnostics
    return bundle


async def until_event(
    runtime: AgentRuntime, session_id: str, type_: str, *, start: int = 0
) -> Event:
    """Follow the session's stream (as the HTTP stream route does) until `type_` shows up."""
    while True:
        events = await runtime.follow_events(session_id, principal=ALICE, start=start, timeout=10)
        assert events, f"stream went quiet before {type_}"
        for event in events:
            if event.type == type_:
                return event
        start = events[-1].index + 1


async def test_hooks_see_every_event_of_a_turn_in_index_order(tmp_path: Path) -> None:
    seen: dict[str, list[int]] = {}

    async def audit(event: Event, ctx: HookContext) -> None:
        seen.setdefault(ctx.session.id, []).append(event.index)

    fanout = LocalHookFanout([NamedHook("audit", define_hook(events={"*": audit}))])
    runtime = AgentRuntime(project(tmp_path), MemoryStore(), fanout=fanout, state_root=tmp_path)
    a = await runtime.start_session("Hello there.", principal=ALICE)
    b = await runtime.start_session("Another one.", principal=ALICE)
    for sid in (a.session_id, b.session_id):
        await until_event(runtime, sid, "session.waiting")
    await fanout.drain()
    for sid in (a.session_id, b.session_id):
        recorded = [e.index for e in await runtime.read_events(sid, principal=ALICE)]
        assert seen[sid] == recorded


async def test_a_failing_hook_affects_neither_other_hooks_nor_the_turn(tmp_path: Path) -> None:
    good: list[str] = []

    async def explode(event: Event, ctx: HookContext) -> None:
        raise RuntimeError("broken hook")

    async def record(event: Event, ctx: HookContext) -> None:
        good.append(event.type)

    fanout = LocalHookFanout(
        [
            NamedHook("broken", define_hook(events={"*": explode})),
            NamedHook("metrics", define_hook(events={"turn.completed": record})),
        ]
    )
    runtime = AgentRuntime(project(tmp_path), MemoryStore(), fanout=fanout, state_root=tmp_path)
    accepted = await runtime.start_session("Hello.", principal=ALICE)
    completed = await until_event(runtime, accepted.session_id, "turn.completed")
    await fanout.drain()
    assert completed.data["result"]
    assert good == ["turn.completed"]


async def test_a_blocked_hook_does_not_delay_turn_completed_on_the_stream(
    tmp_path: Path,
) -> None:
    # The hook waits on a gate the test opens only after the turn completed: if hooks held
    # up the turn, `turn.completed` could never be recorded (no clock involved).
    started = asyncio.Event()
    gate = asyncio.Event()
    finished: list[str] = []

    async def blocked(event: Event, ctx: HookContext) -> None:
        started.set()
        await gate.wait()
        finished.append(event.type)

    fanout = LocalHookFanout([NamedHook("blocked", define_hook(events={"*": blocked}))])
    runtime = AgentRuntime(project(tmp_path), MemoryStore(), fanout=fanout, state_root=tmp_path)
    accepted = await runtime.start_session("Hello.", principal=ALICE)
    await until_event(runtime, accepted.session_id, "turn.completed")
    assert started.is_set()  # the hook is running...
    assert finished == []  # ...and still held while the stream already has the event
    gate.set()
    await fanout.drain()
    assert "turn.completed" in finished  # released, it heard every event after all
    await fanout.close()


async def test_hooks_discovered_in_the_agent_folder_are_called(tmp_path: Path) -> None:
    bundle = project(
        tmp_path,
        """
        from agentkit import define_hook

        SEEN = []


        def on_completed(event, ctx):
            SEEN.append((ctx.session.id, ctx.session.channel_id, event.data["usage"]))


        hook = define_hook(events={"turn.completed": on_completed})
        """,
    )
    fanout = LocalHookFanout.from_bundle(bundle)
    assert [h.name for h in fanout.hooks] == ["audit"]
    runtime = AgentRuntime(bundle, MemoryStore(), fanout=fanout, state_root=tmp_path)
    accepted = await runtime.start_session("Hello.", principal=ALICE)
    await until_event(runtime, accepted.session_id, "turn.completed")
    await fanout.drain()
    handler: Any = fanout.hooks[0].definition.events["turn.completed"]
    [(sid, channel, usage)] = handler.__globals__["SEEN"]
    assert (sid, channel) == (accepted.session_id, "http")
    assert usage["outputTokens"] > 0
