"""The GitHub channel's webhook route: one delivery in, at most one turn out.

Order of work for a delivery (already admitted by the signature check):
`ping` answers at once; a delivery id seen before answers 200 and does nothing (GitHub
redelivers); a handler in `on` for `<event>.<action>` (or `<event>`) replaces the default;
otherwise the default PR and comment behaviour below runs.

GitHub gives up on a delivery after 10 s, so the request does store work and at most two
short GitHub calls (an `/approve`'s read of the PR head, and a reaction), each tried once
within `IN_REQUEST_TIMEOUT`. Comments (replies, approval requests, the notice that a push
voided an approval) are posted by the channel's delivery handlers (`replies`), which run
after the request: in-process locally, in the hooks function on AWS.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

from agentkit.authoring.channels import ChannelContext
from agentkit.channels.claims import released_on_failure
from agentkit.channels.github.client import GitHubClient, GitHubError
from agentkit.channels.github.keys import (
    MARKER,
    PullRef,
    approval_asked,
    comment_message,
    pr_message,
    pull_ref,
)
from agentkit.channels.github.voids import void
from agentkit.errors import BadRequest

log = logging.getLogger("agentkit.channels.github")
PR_ACTIONS = frozenset({"opened", "reopened", "ready_for_review", "synchronize"})
TRUSTED = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
COMMAND_RE = re.compile(r"^\s*/(?P<verb>approve|deny)\s+(?P<call>[A-Za-z0-9_.:-]{1,200})\s*$")
DELIVERY_HEADER = "X-GitHub-Delivery"
EVENT_HEADER = "X-GitHub-Event"
IN_REQUEST_TIMEOUT = 3.0  # per GitHub call made inside a webhook request (one try each)


def content_key(event: str, payload: dict[str, Any]) -> str:
    """What makes a delivery's signed content unique: a comment's id and action, or a pull
    request's number, action and head SHA ("" when the payload names neither)."""
    action = str(payload.get("action") or "")
    repo = str((payload.get("repository") or {}).get("full_name") or "")
    if event == "issue_comment":
        comment_id = (payload.get("comment") or {}).get("id")
        return f"content:{repo}:comment:{comment_id}:{action}" if comment_id is not None else ""
    if event == "pull_request":
        pr = payload.get("pull_request") or {}
        number = pr.get("number", payload.get("number"))
        head = str((pr.get("head") or {}).get("sha") or "")
        return f"content:{repo}:pr:{number}:{action}:{head}" if number is not None else ""
    return ""


class Webhook:
    """The route handler: `await webhook(ctx)` -> the JSON reply (or `{"task": ...}`)."""

    def __init__(
        self,
        client: GitHubClient,
        *,
        on: Mapping[str, Callable[..., Any]],
        approvers: list[str],
        bot_login: str | None,
    ) -> None:
        self.client = client
        self.on = dict(on)
        self.approvers = {a.lower() for a in approvers}
        self.bot_login = (bot_login or "").lower() or None

    async def __call__(self, ctx: ChannelContext) -> Any:
        event = ctx.headers.get(EVENT_HEADER.lower()) or ""
        if event == "ping":
            return {"ok": True, "pong": True}
        try:
            payload = json.loads(ctx.raw_body or b"null")
        except ValueError:
            raise BadRequest("the delivery is not JSON") from None
        if not isinstance(payload, dict) or not event:
            raise BadRequest("a GitHub delivery is a JSON object with an X-GitHub-Event header")
        delivery = ctx.headers.get(DELIVERY_HEADER.lower())
        # GitHub redelivers: one delivery id starts at most one turn. The id is not signed,
        # so the signed content is claimed too: the same body under a fresh id is a replay.
        keys = [f"delivery:{delivery}" if delivery else "", content_key(event, payload)]
        for key in filter(None, keys):
            if await self._seen(ctx, key):
                return {"ok": True, "duplicate": True}
        # A redelivery of a delivery whose handling failed must be handled, not dropped.
        async with released_on_failure(ctx.sessions, *keys):
            return await self._handle(event, payload, ctx)

    async def _handle(self, event: str, payload: dict[str, Any], ctx: ChannelContext) -> Any:
        action = str(payload.get("action") or "")
        handler = self.on.get(f"{event}.{action}") or self.on.get(event)
        if handler is not None:
            result = handler(payload, ctx)
            return await result if inspect.isawaitable(result) else result
        if event == "pull_request":
            return await self._pull_request(action, payload, ctx)
        if event == "issue_comment" and action == "created":
            return await self._comment(payload, ctx)
        return {"ok": True, "ignored": f"{event}.{action}" if action else event}

    @staticmethod
    async def _seen(ctx: ChannelContext, key: str) -> bool:
        if ctx.sessions is None:
            return False
        return not await ctx.sessions.claim(key)

    async def _pull_request(self, action: str, payload: dict[str, Any], ctx: ChannelContext) -> Any:
        pr = payload.get("pull_request") or {}
        ref = pull_ref(payload, pr.get("number", payload.get("number")))
        if ref is None:
            raise BadRequest("pull_request delivery without repository or number")
        if action == "closed":
            cancelled = await self._cancel_reminders(ctx, ref)
            return {"ok": True, "key": ref.key, "remindersCancelled": cancelled}
        if action not in PR_ACTIONS:
            return {"ok": True, "ignored": f"pull_request.{action}"}
        if action == "synchronize":
            await self._void_stale_approvals(ctx, ref)
        accepted = await ctx.receive(pr_message(action, pr, ref), continuation_key=ref.key)
        return {"ok": True, "key": ref.key, "sessionId": accepted.session_id}

    async def _comment(self, payload: dict[str, Any], ctx: ChannelContext) -> Any:
        issue = payload.get("issue") or {}
        comment = payload.get("comment") or {}
        if not issue.get("pull_request"):
            return {"ok": True, "ignored": "issue_comment on an issue"}
        user = comment.get("user") or {}
        login = str(user.get("login") or "")
        body = str(comment.get("body") or "")
        if MARKER in body or user.get("type") == "Bot" or login.lower() == self.bot_login:
            return {"ok": True, "ignored": "own comment"}
        ref = pull_ref(payload, issue.get("number"))
        if ref is None:
            raise BadRequest("issue_comment delivery without repository or number")
        command = COMMAND_RE.match(body)
        if command is not None:
            return await self._command(ctx, ref, comment, command["verb"], command["call"])
        accepted = await ctx.receive(comment_message(comment), continuation_key=ref.key)
        return {"ok": True, "key": ref.key, "sessionId": accepted.session_id}

    # ---- approvals -------------------------------------------------------------------

    async def _command(
        self, ctx: ChannelContext, ref: PullRef, comment: dict[str, Any], verb: str, call_id: str
    ) -> Any:
        login = str((comment.get("user") or {}).get("login") or "").lower()
        association = str(comment.get("author_association") or "")
        comment_id = comment.get("id")
        if login not in self.approvers or association not in TRUSTED:
            await self._react(ref, comment_id, "-1")
            return {"ok": True, "refused": login or "unknown"}
        assert ctx.sessions is not None
        session_id = await ctx.sessions.find(ref.key)
        pending = await ctx.sessions.approvals(session_id) if session_id else []
        if session_id is None or not any(p.call_id == call_id for p in pending):
            await self._react(ref, comment_id, "confused")
            return {"ok": True, "unknownCall": call_id}
        decision = "approve" if verb == "approve" else "deny"
        if decision == "approve":
            pinned, live = await self._heads(ctx, ref, session_id, call_id)
            if live is None:
                # GitHub did not answer in time: decide nothing; the approver can comment again.
                await self._react(ref, comment_id, "confused")
                return {"ok": True, "callId": call_id, "undecided": "head unreadable"}
            if pinned is None or pinned != live:
                await void(ctx, session_id, call_id)
                await self._react(ref, comment_id, "-1")
                return {"ok": True, "callId": call_id, "decision": "deny", "reason": "head moved"}
        await ctx.sessions.resolve(session_id, call_id, decision)
        await self._react(ref, comment_id, "+1")
        return {"ok": True, "callId": call_id, "decision": decision}

    async def _heads(
        self, ctx: ChannelContext, ref: PullRef, session_id: str, call_id: str
    ) -> tuple[str | None, str | None]:
        """The head the approval was asked on (from the session's stream) and the live one."""
        assert ctx.sessions is not None
        _, pinned = approval_asked(await ctx.sessions.read_events(session_id), call_id)
        try:
            pr = await self.client.get_pr(
                ref.owner, ref.repo, ref.number, retries=0, timeout=IN_REQUEST_TIMEOUT
            )
        except GitHubError as exc:
            log.error("cannot read %s to check its head: %s", ref.key, exc)
            return pinned, None
        return pinned, str((pr.get("head") or {}).get("sha") or "") or None

    async def _void_stale_approvals(self, ctx: ChannelContext, ref: PullRef) -> None:
        """A push voids every approval still pending on the PR's session (delivery posts
        the notice: `Replies.on_approval_resolved`)."""
        if ctx.sessions is None:
            return
        session_id = await ctx.sessions.find(ref.key)
        if session_id is None:
            return
        for pending in await ctx.sessions.approvals(session_id):
            await void(ctx, session_id, pending.call_id)

    async def _cancel_reminders(self, ctx: ChannelContext, ref: PullRef) -> int:
        reminders = getattr(ctx.host, "reminders", None)
        if reminders is None:
            return 0
        cancelled = 0
        for reminder in await reminders.list():
            if (
                getattr(reminder, "channel_id", None) == ctx.channel
                and getattr(reminder, "continuation_token", None) == ref.key
                and getattr(reminder, "status", "active") == "active"
            ):
                cancelled += int(bool(await reminders.cancel(reminder.id)))
        return cancelled

    async def _react(self, ref: PullRef, comment_id: Any, content: str) -> None:
        if not isinstance(comment_id, int):
            return
        try:
            await self.client.react(
                ref.owner, ref.repo, comment_id, content, timeout=IN_REQUEST_TIMEOUT
            )
        except GitHubError as exc:
            log.warning("could not react on %s: %s", ref.key, exc)
