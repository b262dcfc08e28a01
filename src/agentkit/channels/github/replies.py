"""Delivery handlers of the GitHub channel: replies, approval requests and the notice
that a push voided an approval, as PR comments.

They run wherever channel delivery runs (in-process locally, the hooks function on AWS),
never inside the webhook request. Each post is claimed first (`ctx.sessions.claim`), so a
redelivered event, a retried batch or two processes never post twice for one turn or one
approval request. Failures are logged, never raised into delivery.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from agentkit.authoring.channels import ChannelEventContext
from agentkit.channels.github.client import GitHubClient, GitHubError
from agentkit.channels.github.keys import MARKER, approval_asked, parse_key
from agentkit.channels.github.voids import was_voided
from agentkit.events import Event, EventType

log = logging.getLogger("agentkit.channels.github")


class Replies:
    """`turn.completed` -> a comment with the answer; `action.approval_requested` -> a
    comment listing the call and how to answer it."""

    def __init__(self, client: GitHubClient, approvers: list[str]) -> None:
        self.client = client
        self.approvers = approvers

    async def _post_once(self, ctx: ChannelEventContext, claim: str, body: str) -> None:
        ref = parse_key(ctx.session.continuation_key)
        if ref is None or ctx.sessions is None:
            return
        if not await ctx.sessions.claim(claim):
            return  # already posted (or being posted) by another delivery
        try:
            await self.client.comment(ref.owner, ref.repo, ref.number, f"{body}\n\n{MARKER}")
        except GitHubError as exc:
            log.error("could not comment on %s: %s", ref.key, exc)

    async def on_turn_completed(self, event: Event, ctx: ChannelEventContext) -> None:
        text = str(event.data.get("result") or "").strip()
        if text:
            await self._post_once(ctx, f"reply:{event.session_id}:{event.turn_id}", text)

    async def on_approval_requested(self, event: Event, ctx: ChannelEventContext) -> None:
        call_id = str(event.data.get("callId", ""))
        tool = str(event.data.get("toolName", ""))
        args = json.dumps(event.data.get("arguments") or {}, indent=2, sort_keys=True)
        events = await ctx.sessions.read_events(event.session_id) if ctx.sessions else []
        _, head = approval_asked(events, call_id)
        who = ", ".join(f"@{a}" for a in self.approvers) or "nobody (no approvers configured)"
        body = (
            f"The agent wants to run `{tool}` and needs approval (call `{call_id}`).\n\n"
            f"```json\n{args}\n```\n\n"
            f"Reply `/approve {call_id}` or `/deny {call_id}`. Approvers: {who}.\n"
            f"This approval is for head {head or 'unknown'}; a new push voids it."
        )
        await self._post_once(ctx, f"ask:{event.session_id}:{call_id}", body)

    async def on_approval_resolved(self, event: Event, ctx: ChannelEventContext) -> None:
        """A call denied because the PR moved since it was asked (a push voided it, or
        `/approve` came after one): say so on the PR. A plain `/deny` got its reaction."""
        if event.data.get("decision") != "deny" or ctx.sessions is None:
            return
        ref = parse_key(ctx.session.continuation_key)
        call_id = str(event.data.get("callId", ""))
        if ref is None or not await was_voided(ctx, event.session_id, call_id):
            return
        asked, pinned = approval_asked(await ctx.sessions.read_events(event.session_id), call_id)
        if asked is None:
            return
        tool = str(asked.data.get("toolName", ""))
        if pinned is None:
            why = (
                "it was asked before the pull request's head was known, so an approval could"
                " not be checked against what was pushed"
            )
        else:
            why = f"it was asked for head {pinned}, and the pull request moved"
            try:
                pr = await self.client.get_pr(ref.owner, ref.repo, ref.number)
                live = str((pr.get("head") or {}).get("sha") or "")
            except GitHubError as exc:  # the notice goes out without the new head
                log.warning("cannot read %s for the voided approval's notice: %s", ref.key, exc)
                live = ""
            why += f" to {live}" if live else " since"
        body = f"Denied `{call_id}` ({tool}): {why}. Nothing ran."
        await self._post_once(ctx, f"void:{event.session_id}:{call_id}", body)

    def handlers(self) -> dict[str, Any]:
        return {
            EventType.TURN_COMPLETED.value: self.on_turn_completed,
            EventType.ACTION_APPROVAL_REQUESTED.value: self.on_approval_requested,
            EventType.ACTION_APPROVAL_RESOLVED.value: self.on_approval_resolved,
        }
