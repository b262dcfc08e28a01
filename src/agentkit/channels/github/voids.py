"""Approvals voided because the pull request moved, told apart from a plain `/deny`.

The webhook denies a pending approval when a push lands (`synchronize`) or when `/approve`
comes after one. It marks such a denial first (a claim `voided:<session>:<call>`), so the
delivery handler that explains it on the PR (`Replies.on_approval_resolved`) acts on what
was decided, not on a second look at the head, which a later push or a slow GitHub could
make say something else. A plain `/deny`, or a budget question nobody answered, has no mark
and gets no notice.
"""

from __future__ import annotations

from agentkit.authoring.channels import ChannelContext, ChannelEventContext


def _mark(session_id: str, call_id: str) -> str:
    return f"voided:{session_id}:{call_id}"


async def void(ctx: ChannelContext, session_id: str, call_id: str) -> None:
    """Deny `call_id` as voided by a move of the pull request's head."""
    if ctx.sessions is None:
        return
    await ctx.sessions.claim(_mark(session_id, call_id))
    await ctx.sessions.resolve(session_id, call_id, "deny")


async def was_voided(ctx: ChannelEventContext, session_id: str, call_id: str) -> bool:
    """Whether the denial of `call_id` was a void (the mark exists)."""
    if ctx.sessions is None:
        return False
    mark = _mark(session_id, call_id)
    if await ctx.sessions.claim(mark):
        await ctx.sessions.release(mark)  # no mark before this look: a plain deny
        return False
    return True


__all__ = ["void", "was_voided"]
