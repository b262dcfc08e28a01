"""A custom channel: `POST /v1/channels/drive` with a PR number starts (or continues) a review."""

from pydantic import BaseModel, Field

from agentkit import ChannelContext, ChannelEventContext, define_channel, route


class DriveBody(BaseModel):
    pr: int = Field(ge=1, description="The pull request number to review")
    note: str = Field(default="", description="Anything the reviewer should know")


async def drive(body: DriveBody, ctx: ChannelContext) -> dict[str, str]:
    message = f"Review PR #{body.pr}." + (f" Note: {body.note}" if body.note else "")
    accepted = await ctx.receive(message, continuation_key=ctx.continuation_key)
    return {"sessionId": accepted.session_id}


def deliver(event: object, ctx: ChannelEventContext) -> None:
    # A real channel would post the reply back to the code host here. ctx.logger's lines
    # reach GET /v1/logs (and CloudWatch when deployed); a logger of our own would not.
    ctx.logger.info("review reply for session %s: %s", ctx.session.id, getattr(event, "data", {}))


channel = define_channel(
    description="Start a review of one pull request; one conversation per PR.",
    routes=[route("POST", "/", drive)],
    events={"turn.completed": deliver},
    continuation=lambda body: f"pr:{body.pr}",
)
