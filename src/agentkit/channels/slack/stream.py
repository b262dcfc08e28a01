"""A turn's reply streamed into its Slack thread as the model writes it.

Slack's streaming methods: `chat.startStream` opens a message in the thread,
`chat.appendStream` adds Markdown to it, `chat.stopStream` finalizes it. The text is
buffered between calls (sent when `interval` seconds have passed since the last send or
`size` characters are waiting, and whenever the caller asks, say at a step's end) so a
long reply costs a few calls: `appendStream` is in rate tier 4, `startStream` and
`stopStream` in tier 2.

Slack finalizes a stream that stayed idle too long (a long tool call, an approval). The
next call then answers `message_not_in_streaming_state`; nothing of that call landed, so
the same text opens a new stream in the thread and the reply carries on there: no text
is lost and none is sent twice. Any other failure ends streaming for the turn and leaves
the undelivered text in `pending`, for the caller to post another way.

slack_sdk's own helper (`AsyncWebClient.chat_stream`, an `AsyncChatStream`) buffers by
size only, cannot restart a stream Slack finalized, and keeps its unsent text private, so
this class calls the SDK's three methods itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from agentkit.channels.slack.api import call_or_error
from agentkit.channels.slack.keys import ThreadRef

log = logging.getLogger("agentkit.channels.slack")
STREAM_GONE = "message_not_in_streaming_state"
# Answers that say the workspace or token cannot stream at all (not a passing failure).
UNSUPPORTED = frozenset(
    {
        "unknown_method",
        "method_not_supported",
        "not_allowed",
        "not_allowed_token_type",
        "feature_not_enabled",
        "not_enabled",
        "missing_scope",
        "no_permission",
        "team_not_allowed",
    }
)
_HANDLED = UNSUPPORTED | {STREAM_GONE}
MAX_MARKDOWN = 12_000  # Slack's limit on `markdown_text` per call
DEFAULT_INTERVAL = 1.0
DEFAULT_SIZE = 2_000


@dataclass(frozen=True, slots=True)
class Recipient:
    """Who the streamed reply answers (Slack wants them named when streaming in a
    channel): the user and the workspace the user belongs to."""

    team: str
    user: str


async def _api(
    client: AsyncWebClient, method: str, **kwargs: Any
) -> tuple[dict[str, Any], str | None]:
    """One streaming call: `(answer, None)` or `({}, error)`; never raises. Arguments that
    are None are left out, as the SDK's own methods do; the two kinds of error the stream
    handles itself are not logged as failures."""
    args = {k: v for k, v in kwargs.items() if v is not None}
    return await call_or_error(client, method, quiet=_HANDLED, **args)


class ReplyStream:
    """One turn's streamed reply; its methods are safe to call concurrently.

    `delivered` is the text Slack has (over every message the stream opened), `pending`
    the text it does not have yet. `failed` names the error that ended streaming (then
    `unsupported` says whether it was the workspace refusing the methods).
    """

    def __init__(
        self,
        client: AsyncWebClient,
        ref: ThreadRef,
        recipient: Recipient | None = None,
        *,
        interval: float = DEFAULT_INTERVAL,
        size: int = DEFAULT_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.ref = ref
        self.recipient = recipient
        self.interval = interval
        self.size = max(1, min(size, MAX_MARKDOWN))
        self.clock = clock
        self.delivered = ""
        self.pending = ""
        self.ts: str | None = None  # the open message, while it streams
        self.failed: str | None = None
        self.unsupported = False
        self.step_done = False  # the caller's mark: the model finished a step's text
        self._last_send: float | None = None
        self._lock = asyncio.Lock()

    @property
    def started(self) -> bool:
        """Whether any text reached Slack."""
        return bool(self.delivered)

    # ---- adding text -----------------------------------------------------------------

    async def add(self, text: str) -> None:
        """Buffer `text`; send what is waiting when it is due."""
        if not text:
            return
        self.pending += text
        if self._due():
            await self.flush()

    def _due(self) -> bool:
        if self.failed is not None:
            return False
        if self._last_send is None:  # the first words show at once
            return True
        waited = self.clock() - self._last_send
        return len(self.pending) >= self.size or waited >= self.interval

    async def flush(self) -> None:
        """Send everything waiting (several calls when it exceeds Slack's limit)."""
        async with self._lock:
            await self._send_all(keep=0)

    async def _send_all(self, keep: int) -> None:
        """Send pending text until at most `keep` characters are left."""
        while len(self.pending) > keep and self.failed is None:
            piece = self.pending[: min(MAX_MARKDOWN, len(self.pending) - keep)]
            if not await self._send(piece):
                return
            self.pending = self.pending[len(piece) :]
            self.delivered += piece
        self._last_send = self.clock()

    async def _send(self, piece: str) -> bool:
        if self.ts is None:
            return await self._start(piece)
        _, error = await _api(
            self.client,
            "chat.appendStream",
            channel=self.ref.channel,
            ts=self.ts,
            markdown_text=piece,
        )
        if error == STREAM_GONE:
            return await self._restart(piece)
        if error is not None:
            self.failed = error
            return False
        return True

    async def _restart(self, piece: str) -> bool:
        """Slack finalized the message while the reply was idle: carry on in a new one."""
        log.info("Slack finalized the streamed reply %s; continuing in a new message", self.ts)
        self.ts = None
        return await self._start(piece)

    async def _start(self, piece: str) -> bool:
        recipient = self.recipient
        answer, error = await _api(
            self.client,
            "chat.startStream",
            channel=self.ref.channel,
            thread_ts=self.ref.thread_ts,
            markdown_text=piece,
            recipient_team_id=recipient.team if recipient else None,
            recipient_user_id=recipient.user if recipient else None,
        )
        if error is None and not answer.get("ts"):
            error = "no_ts"
        if error is not None:
            self.failed = error
            self.unsupported = error in UNSUPPORTED
            return False
        self.ts = str(answer["ts"])
        return True

    # ---- ending ----------------------------------------------------------------------

    async def stop(self) -> None:
        """Send what is waiting and finalize the open message. Text added later opens a
        new message (after an approval request, say). After a failure, only finalizes."""
        async with self._lock:
            if self.failed is None:
                # The last piece rides on stopStream itself: one call fewer.
                await self._send_all(keep=MAX_MARKDOWN)
                if self.ts is None and self.pending and await self._start(self.pending):
                    self.delivered += self.pending
                    self.pending = ""
            if self.ts is not None:
                await self._stop_open()

    async def _stop_open(self) -> None:
        text = self.pending if self.failed is None else ""
        ts, self.ts = self.ts, None
        _, error = await _api(
            self.client,
            "chat.stopStream",
            channel=self.ref.channel,
            ts=ts,
            markdown_text=text or None,
        )
        if error is None:
            self.delivered += text
            self.pending = self.pending[len(text) :]
        elif error == STREAM_GONE and text:
            # Finalized while idle: the last words open a message of their own.
            self.ts = ts
            if await self._restart(text):
                self.delivered += text
                self.pending = self.pending[len(text) :]
                await self._stop_open()
        elif text:
            self.failed = error
