"""Delivery: a channel's `events` handlers hear every event of the sessions it owns.

Delivery follows the hook rules (`agentkit.hooks`): observe-only, a handler's error is
logged and never fatal, each handler sees a session's events in index order. Locally
`ChannelFanout` sits beside the hook fan-out in the runtime's `Fanout`; on AWS the hooks
function calls `deliver_to_channels` with each stream batch (at-least-once there, so
handlers that act on the outside world de-duplicate with `ctx.sessions.claim`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from agentkit.authoring.channels import ChannelEventContext, ChannelEventHandler
from agentkit.authoring.contexts import HookContext, SessionInfo
from agentkit.authoring.hooks import HookDefinition
from agentkit.channels.runtime import ChannelRuntime
from agentkit.events import Event
from agentkit.hooks import HookFailure, LocalHookFanout, NamedHook, SessionLookup, deliver_to_hooks
from agentkit.sessions import SessionRecord


def _adapt(
    runtime: ChannelRuntime, channel_id: str, handler: ChannelEventHandler, live: bool = False
) -> Callable[[Event, HookContext], Any]:
    """A hook handler that calls a channel handler with its `ChannelEventContext`."""

    async def call(event: Event, hook_ctx: HookContext) -> None:
        ctx = ChannelEventContext(
            channel=channel_id,
            session=hook_ctx.session,
            host=runtime.host,
            sessions=runtime.sessions(channel_id),
            live=live,
        )
        if inspect.iscoroutinefunction(handler):
            await handler(event, ctx)
            return
        result = await asyncio.to_thread(handler, event, ctx)
        if inspect.isawaitable(result):
            await result

    return call


def channel_hooks(runtime: ChannelRuntime, *, live: bool = False) -> dict[str, NamedHook]:
    """Channel id -> its `events` handlers as one hook (only channels that have some).
    `live`: the handlers hear events as the turn records them (`ChannelEventContext.live`)."""
    out: dict[str, NamedHook] = {}
    for channel_id, definition in runtime.channels.items():
        if not definition.events:
            continue
        events = {
            key: _adapt(runtime, channel_id, handler, live)
            for key, handler in definition.events.items()
        }
        out[channel_id] = NamedHook(f"channel:{channel_id}", HookDefinition(events=events))
    return out


class ChannelFanout:
    """The local `Fanout` for channel delivery: one hook queue per channel, fed only the
    events of sessions that channel owns."""

    def __init__(self, runtime: ChannelRuntime) -> None:
        self._runtime = runtime
        self._fanouts: dict[str, LocalHookFanout] | None = None

    def _lanes(self) -> dict[str, LocalHookFanout]:
        if self._fanouts is None:
            self._fanouts = {
                cid: LocalHookFanout([hook])
                for cid, hook in channel_hooks(self._runtime, live=True).items()
            }
        return self._fanouts

    def publish(self, session: SessionRecord, events: list[Event]) -> None:
        fanout = self._lanes().get(session.channel_id)
        if fanout is not None:
            fanout.publish(session, events)

    async def drain(self) -> None:
        for fanout in list(self._lanes().values()):
            await fanout.drain()

    async def close(self) -> None:
        for fanout in list((self._fanouts or {}).values()):
            await fanout.close()


async def deliver_to_channels(
    runtime: ChannelRuntime, events: Iterable[Event], *, sessions: SessionLookup
) -> list[HookFailure]:
    """Deliver a batch (the AWS hooks function's) to the owning channels, in order."""
    hooks = channel_hooks(runtime)
    if not hooks:
        return []
    infos: dict[str, SessionInfo | None] = {}
    failures: list[HookFailure] = []
    for event in events:
        if event.session_id not in infos:
            infos[event.session_id] = await sessions(event.session_id)
        info = infos[event.session_id]
        hook = hooks.get(info.channel_id) if info is not None else None
        if hook is None or info is None:
            continue
        failures += await deliver_to_hooks([hook], [event], sessions={info.id: info})
    return failures
