from agentkit import HookContext, define_hook

# ctx.logger, not a module logger: its lines reach /v1/logs and the playground.


def on_approval(event: object, ctx: HookContext) -> None:
    data = getattr(event, "data", {})
    ctx.logger.info("approval resolved in session %s: %s", ctx.session.id, data)


async def on_turn(event: object, ctx: HookContext) -> None:
    usage = getattr(event, "data", {}).get("usage")
    ctx.logger.info("turn completed in session %s, usage %s", ctx.session.id, usage)


hook = define_hook(
    events={"action.approval_resolved": on_approval, "turn.completed": on_turn},
)
