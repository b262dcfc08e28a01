"""Delivery claims that do not outlive a failure.

A pack claims a delivery (GitHub's delivery id, Slack's event id and message) before it
hands the message over, so a redelivery starts no second turn. If the hand-over then fails
(the store or the dispatcher is down), the claim must go, or the sender's retry would be
dropped as a duplicate and the message lost. A deliberate refusal (a 4xx such as
`session_busy` under `on_busy="reject"`, or a daily limit) keeps its claim: retrying it
later would turn a refusal into a late, out-of-order message.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agentkit.authoring.channels import ChannelSessions
from agentkit.errors import HttpError

log = logging.getLogger("agentkit.channels")


def _refusal(exc: BaseException) -> bool:
    return isinstance(exc, HttpError) and exc.status < 500


@asynccontextmanager
async def released_on_failure(sessions: ChannelSessions | None, *keys: str) -> AsyncIterator[None]:
    """Run the hand-over; if it fails (other than by a refusal), forget `keys`' claims."""
    try:
        yield
    except BaseException as exc:
        if sessions is not None and not _refusal(exc):
            for key in filter(None, keys):
                try:
                    await sessions.release(key)
                except Exception:
                    # The original failure is what the caller must see; this one is logged.
                    log.exception("could not release the claim %s; a retry will be dropped", key)
        raise


__all__ = ["released_on_failure"]
