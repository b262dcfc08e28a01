import logging

from agentkit import HookContext, define_hook

log = logging.getLogger("pr_review.audit")


def on_approval(event: object, ctx: HookContext) -> None:
    log.info("approval resolved in session %s: %s", ctx.session.id, getattr(event, "data", {}))


async def on_turn(event: object, ctx: HookContext) -> None:
    usage = getattr(event, "data", {}).get("usage")
    log.info("turn completed in session %s, usage %s", ctx.session.id, usage)


hook = define_hook(
    events={"action.approval_resolved": on_approval, "turn.completed": on_turn},
)
