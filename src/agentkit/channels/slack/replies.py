"""Delivery: turns of a thread's session become posts in that thread.

- `turn.started` shows progress: `assistant.threads.setStatus` (the status Slack shows
  under an assistant thread), rotated to name the tools while they run; where the
  workspace or conversation does not offer it, an `:eyes:` reaction on the thread's first
  message instead, removed when the turn ends.
- `message.appended` streams the answer into the thread as the model writes it
  (`stream.ReplyStream`), where the workspace offers Slack's streaming methods and the
  events arrive while the turn runs (`ctx.live`: `agentkit serve`; on AWS they arrive in
  batches from the events stream, so the answer is posted once at the end there).
- `turn.completed` ends the stream, or posts the answer in the thread (mrkdwn, split
  under Slack's limits) when nothing was streamed.
- `turn.failed` says so in the thread, briefly.
- `action.approval_requested` posts Approve / Deny buttons.

Deliveries are at least once on AWS, so every post is claimed in the store first: one
reply per turn, one approval message per call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, MutableMapping
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from agentkit.authoring.channels import ChannelEventContext
from agentkit.channels.slack.api import call
from agentkit.channels.slack.blocks import approval_blocks, approval_text
from agentkit.channels.slack.keys import ThreadRef, parse_key
from agentkit.channels.slack.mrkdwn import split, to_mrkdwn
from agentkit.channels.slack.stream import DEFAULT_INTERVAL, DEFAULT_SIZE, Recipient, ReplyStream
from agentkit.events import Event, EventType

log = logging.getLogger("agentkit.channels.slack")
REACTION = "eyes"
THINKING = "is thinking…"


class Replies:
    """The pack's delivery handlers over one Web API client."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        stream: bool = True,
        stream_interval: float = DEFAULT_INTERVAL,
        stream_size: int = DEFAULT_SIZE,
        recipients: MutableMapping[str, Recipient] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.status_works: bool | None = None  # learnt from the first setStatus answer
        self.stream = stream
        self.stream_interval = stream_interval
        self.stream_size = stream_size
        # Thread key -> who wrote last there (the events route fills it in).
        self.recipients: MutableMapping[str, Recipient] = (
            recipients if recipients is not None else {}
        )
        self.clock = clock
        self.streams: dict[tuple[str, str | None], ReplyStream] = {}
        self.cannot_stream: set[str] = set()  # workspaces that refused the methods

    # ---- posting ---------------------------------------------------------------------

    async def _claim(self, ctx: ChannelEventContext, key: str) -> bool:
        return True if ctx.sessions is None else await ctx.sessions.claim(key)

    async def post(self, ref: ThreadRef, markdown: str) -> int:
        """Post `markdown` in the thread (several messages when long); how many landed."""
        posted = 0
        for piece in split(to_mrkdwn(markdown)):
            answer = await call(
                self.client,
                "chat.postMessage",
                channel=ref.channel,
                thread_ts=ref.thread_ts,
                text=piece,
                mrkdwn=True,
            )
            posted += answer is not None
        return posted

    # ---- streaming -------------------------------------------------------------------

    def _streaming(self, ctx: ChannelEventContext, ref: ThreadRef) -> bool:
        return self.stream and ctx.live and ref.team not in self.cannot_stream

    async def on_text(self, event: Event, ctx: ChannelEventContext) -> None:
        ref = parse_key(ctx.session.continuation_key)
        text = str(event.data.get("text") or "")
        if ref is None or not text or not self._streaming(ctx, ref):
            return
        slot = (event.session_id, event.turn_id)
        stream = self.streams.get(slot)
        if stream is None:
            stream = self.streams[slot] = ReplyStream(
                self.client,
                ref,
                self.recipients.get(ref.key),
                interval=self.stream_interval,
                size=self.stream_size,
                clock=self.clock,
            )
        elif stream.step_done and (stream.ts is not None or stream.pending):
            text = "\n\n" + text  # a new step's words start a new paragraph
        stream.step_done = False
        await stream.add(text)
        if stream.unsupported and ref.team not in self.cannot_stream:
            # Remembered for the workspace: later turns post once, without trying again.
            log.warning(
                "Slack workspace %s cannot stream replies (%s); posting them whole",
                ref.team,
                stream.failed,
            )
            self.cannot_stream.add(ref.team)

    async def on_step_done(self, event: Event, ctx: ChannelEventContext) -> None:
        """A step's text is complete (a tool may run for long now): send what waits."""
        stream = self.streams.get((event.session_id, event.turn_id))
        if stream is not None:
            stream.step_done = True
            await stream.flush()

    async def _end_stream(self, event: Event, ref: ThreadRef, *, keep: bool = False) -> bool:
        """Finalize the turn's streamed message; True when some of the reply was streamed
        (then whatever did not reach Slack is posted now, so nothing is lost)."""
        slot = (event.session_id, event.turn_id)
        stream = self.streams.get(slot) if keep else self.streams.pop(slot, None)
        if stream is None or not stream.started:
            return False
        await stream.stop()
        if stream.pending:
            await self.post(ref, stream.pending)
            stream.pending = ""
        return True

    # ---- progress --------------------------------------------------------------------

    async def _status(self, ref: ThreadRef, status: str) -> bool:
        if self.status_works is False:
            return False
        answer = await call(
            self.client,
            "assistant.threads.setStatus",
            channel_id=ref.channel,
            thread_ts=ref.thread_ts,
            status=status,
        )
        if self.status_works is None:
            self.status_works = answer is not None
        return answer is not None

    async def on_turn_started(self, event: Event, ctx: ChannelEventContext) -> None:
        ref = parse_key(ctx.session.continuation_key)
        if ref is None:
            return
        if not await self._status(ref, THINKING):
            await call(
                self.client,
                "reactions.add",
                channel=ref.channel,
                name=REACTION,
                timestamp=ref.thread_ts,
            )

    async def on_actions(self, event: Event, ctx: ChannelEventContext) -> None:
        ref = parse_key(ctx.session.continuation_key)
        names = [
            str(a.get("toolName") or a.get("name") or "")
            for a in event.data.get("actions") or []
            if isinstance(a, dict)
        ]
        names = [n for n in names if n]
        if ref is not None and names and self.status_works:
            await self._status(ref, f"is running {', '.join(names)[:80]}…")

    async def _done(self, ref: ThreadRef) -> None:
        if self.status_works is False:
            await call(
                self.client,
                "reactions.remove",
                channel=ref.channel,
                name=REACTION,
                timestamp=ref.thread_ts,
            )
        elif self.status_works:
            await self._status(ref, "")  # an empty status clears it

    # ---- turn ends and approvals -----------------------------------------------------

    async def on_turn_completed(self, event: Event, ctx: ChannelEventContext) -> None:
        ref = parse_key(ctx.session.continuation_key)
        if ref is None:
            return
        text = str(event.data.get("result") or "").strip()
        if await self._claim(ctx, f"reply:{event.session_id}:{event.turn_id}"):
            streamed = await self._end_stream(event, ref)
            if text and not streamed:
                await self.post(ref, text)
        self.streams.pop((event.session_id, event.turn_id), None)  # a repeat: nothing to keep
        await self._done(ref)

    async def on_turn_failed(self, event: Event, ctx: ChannelEventContext) -> None:
        ref = parse_key(ctx.session.continuation_key)
        if ref is None:
            return
        if await self._claim(ctx, f"failed:{event.session_id}:{event.turn_id}"):
            await self._end_stream(event, ref)
            await self.post(ref, "Sorry, I could not finish that. Please try again.")
        self.streams.pop((event.session_id, event.turn_id), None)
        await self._done(ref)

    async def on_approval_requested(self, event: Event, ctx: ChannelEventContext) -> None:
        ref = parse_key(ctx.session.continuation_key)
        call_id = str(event.data.get("callId", ""))
        if ref is None or not call_id:
            return
        if not await self._claim(ctx, f"ask:{event.session_id}:{call_id}"):
            return
        # The streamed text so far ends above the buttons; the rest streams below them.
        await self._end_stream(event, ref, keep=True)
        tool = str(event.data.get("toolName", ""))
        await call(
            self.client,
            "chat.postMessage",
            channel=ref.channel,
            thread_ts=ref.thread_ts,
            text=approval_text(tool, call_id),
            blocks=approval_blocks(event.session_id, call_id, tool, event.data.get("arguments")),
        )

    def handlers(self) -> dict[str, Any]:
        return {
            EventType.TURN_STARTED.value: self.on_turn_started,
            EventType.MESSAGE_APPENDED.value: self.on_text,
            EventType.MESSAGE_COMPLETED.value: self.on_step_done,
            EventType.ACTIONS_REQUESTED.value: self.on_actions,
            EventType.TURN_COMPLETED.value: self.on_turn_completed,
            EventType.TURN_FAILED.value: self.on_turn_failed,
            EventType.ACTION_APPROVAL_REQUESTED.value: self.on_approval_requested,
        }
