"""Sends into the session a channel key names, starting that session on the key's first use.

Channels (a Slack thread, a pull request), the AG-UI thread and the AI SDK chat all name
their conversations by a key of their own. Two first messages on one new key can arrive
together: two deliveries of one Slack event, two browser tabs on one chat, a client that
retries. Each would find no session and start one, and the key would end up naming only
the last. `KeyedSends` makes one process start one session per key: sends on one key
wait for each other, so the second finds the session the first started and continues it.

Sends on different keys never wait for each other. The lock is per process; see the
protocols guide for what two Lambda invocations racing on one new key do.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentkit.errors import NotFound

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from agentkit.engine.service import Accepted, AgentService, OnBusy
    from agentkit.sessions import Principal


@dataclass(frozen=True, slots=True)
class KeyedSend:
    """What a send did: the accepted turn, and whether it started the key's session."""

    accepted: Accepted
    started: bool


@dataclass(slots=True)
class KeyedSends:
    """The one place that turns "a message on key K" into a session's turn."""

    service: AgentService
    # (channel, key) -> (lock, sends holding or awaiting it); an entry lives only while
    # some send on that key is in flight, so the map stays as small as the traffic.
    _locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = field(default_factory=dict)

    async def send(
        self,
        channel_id: str,
        key: str,
        message: str,
        *,
        acting: Principal,
        owner: Principal,
        source: str,
        on_busy: OnBusy,
    ) -> KeyedSend:
        """Continue the session `key` names on `channel_id` as `acting` (who must own it,
        or be admin), or start it owned by `owner` when the key names none yet."""
        async with self._holding((channel_id, key)):
            try:
                accepted = await self.service.follow_up_by_key(
                    channel_id, key, message, principal=acting, source=source, on_busy=on_busy
                )
                return KeyedSend(accepted, started=False)
            except NotFound:
                accepted = await self.service.start_session(
                    message,
                    principal=owner,
                    channel_id=channel_id,
                    continuation_key=key,
                    source=source,
                )
                return KeyedSend(accepted, started=True)

    @asynccontextmanager
    async def _holding(self, slot: tuple[str, str]) -> AsyncIterator[None]:
        lock, users = self._locks.get(slot) or (asyncio.Lock(), 0)
        self._locks[slot] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[slot]
            if users <= 1:
                del self._locks[slot]
            else:
                self._locks[slot] = (lock, users - 1)


__all__ = ["KeyedSend", "KeyedSends"]
