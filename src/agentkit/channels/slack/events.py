"""The Events API route: one Slack message in, at most one turn out, answered at once.

Slack wants an answer within 3 seconds, so this route only records the message
(`ctx.receive`); the turn runs in the background (the dispatcher locally, TurnFunction on
AWS) and its reply is posted by the delivery handlers. Slack retries a request it thinks
failed (`X-Slack-Retry-Num`) and has been seen to deliver one message under several event
ids, so a message is claimed twice: by `event_id` and by `(channel, ts)`.
"""

# Coverage is below 80%: the tests send signed deliveries of the event kinds the channel
# acts on; the branches that ignore or refuse other Slack event shapes (unknown kinds, empty
# or edited messages, malformed callbacks) have no delivery of their own yet.

from __future__ import annotations

import json
import logging
import re
from collections.abc import MutableMapping
from typing import Any

from agentkit.authoring.channels import ChannelContext
from agentkit.channels.claims import released_on_failure
from agentkit.channels.slack.keys import thread_key
from agentkit.channels.slack.stream import Recipient
from agentkit.errors import BadRequest

log = logging.getLogger("agentkit.channels.slack")
MAX_RECIPIENTS = 10_000
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")


def bot_user_id(payload: dict[str, Any], configured: str | None) -> str | None:
    """The app's bot user: configured, else the one Slack names in `authorizations`."""
    if configured:
        return configured
    for grant in payload.get("authorizations") or []:
        if isinstance(grant, dict) and grant.get("is_bot") and grant.get("user_id"):
            return str(grant["user_id"])
    return None


def strip_mention(text: str, bot: str | None, leading_only: bool) -> str:
    """The text without the bot's mention (any leading mention when the bot is unknown)."""
    if bot:
        text = re.sub(rf"<@{re.escape(bot)}(?:\|[^>]*)?>", "", text)
    elif leading_only:
        text = _MENTION.sub("", text, count=1) if _MENTION.match(text.lstrip()) else text
    return re.sub(r"[ \t]{2,}", " ", text).strip()


class Events:
    """The route handler: `await events(body, ctx)` -> the JSON reply."""

    def __init__(
        self,
        bot_user: str | None = None,
        recipients: MutableMapping[str, Recipient] | None = None,
    ) -> None:
        self.bot_user = bot_user
        # Thread key -> who wrote last there: a streamed reply in a channel names them.
        self.recipients: MutableMapping[str, Recipient] = (
            recipients if recipients is not None else {}
        )

    async def __call__(self, body: Any, ctx: ChannelContext) -> Any:
        payload = body if isinstance(body, dict) else _parse(ctx.raw_body)
        kind = payload.get("type")
        if kind == "url_verification":
            return {"challenge": str(payload.get("challenge") or "")}
        if kind != "event_callback":
            return {"ok": True, "ignored": str(kind)}
        event = payload.get("event")
        if not isinstance(event, dict):
            raise BadRequest("an event_callback carries an event object")
        event_id = payload.get("event_id")
        if event_id and not await _claim(ctx, f"event:{event_id}"):
            return {"ok": True, "duplicate": True}
        bot = bot_user_id(payload, self.bot_user)
        ignored = _ignored(event, bot)
        if ignored:
            return {"ok": True, "ignored": ignored}
        channel, ts = str(event.get("channel") or ""), str(event.get("ts") or "")
        team = str(payload.get("team_id") or event.get("team") or "")
        if not channel or not ts or not team:
            raise BadRequest("a message event names its team, channel and ts")
        text = strip_mention(str(event.get("text") or ""), bot, event["type"] == "app_mention")
        if not text:
            return {"ok": True, "ignored": "empty message"}
        # One message, one turn, whatever event ids it came under.
        if not await _claim(ctx, f"message:{channel}:{ts}"):
            return {"ok": True, "duplicate": True}
        key = thread_key(team, channel, str(event.get("thread_ts") or ts))
        if event.get("user"):
            self._remember(key, Recipient(str(event.get("user_team") or team), str(event["user"])))
        # Slack retries an event that failed: the retry must start the turn, not be dropped.
        claims = (f"message:{channel}:{ts}", f"event:{event_id}" if event_id else "")
        async with released_on_failure(ctx.sessions, *claims):
            accepted = await ctx.receive(text, continuation_key=key)
        return {"ok": True, "key": key, "sessionId": accepted.session_id}

    def _remember(self, key: str, recipient: Recipient) -> None:
        """Keep the thread's latest writer; the oldest threads are forgotten past a bound
        (their next message is remembered again)."""
        self.recipients.pop(key, None)
        self.recipients[key] = recipient
        while len(self.recipients) > MAX_RECIPIENTS:
            del self.recipients[next(iter(self.recipients))]


def _parse(raw: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(raw or b"null")
    except ValueError:
        raise BadRequest("a Slack event is JSON") from None
    if not isinstance(payload, dict):
        raise BadRequest("a Slack event is a JSON object")
    return payload


def _ignored(event: dict[str, Any], bot: str | None) -> str | None:
    """Why an event starts no turn, or None when it does."""
    kind = event.get("type")
    if kind == "message" and event.get("channel_type") != "im":
        return "message outside a direct conversation"
    if kind not in ("app_mention", "message"):
        return str(kind)
    if event.get("subtype"):  # edits, deletions, joins, bot_message, ...
        return f"message subtype {event['subtype']}"
    if event.get("bot_id") or event.get("bot_profile"):
        return "bot message"
    if event.get("edited"):
        return "edited message"
    if bot and event.get("user") == bot:
        return "own message"
    return None


async def _claim(ctx: ChannelContext, key: str) -> bool:
    return True if ctx.sessions is None else await ctx.sessions.claim(key)
