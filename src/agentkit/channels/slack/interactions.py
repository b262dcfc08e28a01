"""The interactivity route: Approve / Deny clicks (`block_actions`, form-encoded `payload=`).

A click by an approver resolves exactly the call its button names, and only while that
call is pending in the session of the thread the button sits in; the message is then
updated to show who decided what. Anyone else, and any click on a call already decided
or no longer pending, gets an ephemeral note and changes nothing.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import parse_qs

from slack_sdk.web.async_client import AsyncWebClient

from agentkit.authoring.channels import ChannelContext
from agentkit.channels.slack.api import call
from agentkit.channels.slack.blocks import ACTIONS, decided_blocks
from agentkit.channels.slack.keys import thread_key
from agentkit.errors import BadRequest, Conflict, NotFound

log = logging.getLogger("agentkit.channels.slack")


def parse_payload(raw: bytes) -> dict[str, Any]:
    """The JSON `payload` field of a form-encoded interaction request."""
    try:
        fields = parse_qs(raw.decode("utf-8"), strict_parsing=True)
        payload = json.loads(fields["payload"][0])
    except (UnicodeDecodeError, ValueError, KeyError, IndexError):
        raise BadRequest("an interaction is a form with a JSON payload field") from None
    if not isinstance(payload, dict):
        raise BadRequest("an interaction payload is a JSON object")
    return payload


class Interactions:
    """The route handler: `await interactions(ctx)` -> the JSON reply."""

    def __init__(self, client: AsyncWebClient, approvers: list[str]) -> None:
        self.client = client
        self.approvers = set(approvers)

    async def __call__(self, ctx: ChannelContext) -> Any:
        payload = parse_payload(ctx.raw_body)
        if payload.get("type") != "block_actions":
            return {"ok": True, "ignored": str(payload.get("type"))}
        action = next(
            (a for a in payload.get("actions") or [] if a.get("action_id") in ACTIONS), None
        )
        if action is None:
            return {"ok": True, "ignored": "not an approval button"}
        try:
            value = json.loads(str(action.get("value") or ""))
            session_id, call_id, tool = str(value["s"]), str(value["c"]), str(value.get("t", ""))
        except (ValueError, KeyError, TypeError):
            raise BadRequest("the button does not name a session and a call") from None
        decision = ACTIONS[str(action["action_id"])]
        user = str((payload.get("user") or {}).get("id") or "")
        container = payload.get("container") or {}
        message = payload.get("message") or {}
        channel = str(container.get("channel_id") or (payload.get("channel") or {}).get("id") or "")
        message_ts = str(container.get("message_ts") or message.get("ts") or "")
        thread_ts = str(container.get("thread_ts") or message.get("thread_ts") or message_ts)
        team = str(
            (payload.get("team") or {}).get("id")
            or (payload.get("user") or {}).get("team_id")
            or ""
        )
        if user not in self.approvers:
            await self._tell(
                channel, user, thread_ts, "Only an approver can decide this; nothing changed."
            )
            return {"ok": True, "refused": user}
        assert ctx.sessions is not None
        # The button must sit in the thread of the session it names.
        if await ctx.sessions.find(thread_key(team, channel, thread_ts)) != session_id:
            await self._tell(
                channel,
                user,
                thread_ts,
                "This button does not belong to this thread; nothing changed.",
            )
            return {"ok": True, "stale": call_id}
        try:
            await ctx.sessions.resolve(session_id, call_id, decision)
        except (Conflict, NotFound) as exc:
            await self._tell(
                channel,
                user,
                thread_ts,
                f"That request is no longer pending ({exc}); nothing changed.",
            )
            return {"ok": True, "stale": call_id}
        text, blocks = decided_blocks(tool, call_id, decision, user)
        if channel and message_ts:
            await call(
                self.client, "chat.update", channel=channel, ts=message_ts, text=text, blocks=blocks
            )
        return {"ok": True, "callId": call_id, "decision": decision}

    async def _tell(self, channel: str, user: str, thread_ts: str, text: str) -> None:
        """An ephemeral note only `user` sees."""
        if channel and user:
            await call(
                self.client,
                "chat.postEphemeral",
                channel=channel,
                user=user,
                thread_ts=thread_ts or None,
                text=text,
            )
