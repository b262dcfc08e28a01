"""Let the agent schedule its own one-time wake-up in the current conversation."""

from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool


class RemindMeInput(BaseModel):
    delay: str = Field(description="When to wake the conversation, such as 20m or 2h")
    prompt: str = Field(min_length=1, description="What the agent should do when it wakes")


@define_tool(description="Schedule a one-time reminder in this conversation.")
async def remind_me(input: RemindMeInput, ctx: ToolContext) -> dict[str, str | None]:
    reminders = ctx.host.reminders
    if reminders is None:
        raise RuntimeError("Reminders are disabled on this host.")

    session = ctx.session
    continuation_token = session.continuation_key if session is not None else None
    if session is None or continuation_token is None:
        raise RuntimeError("This session cannot receive reminder follow-ups.")

    reminder = await reminders.create(
        purpose="user_follow_up",
        channel_id=session.channel_id,
        continuation_token=continuation_token,
        delay=input.delay,
        prompt=input.prompt,
    )
    return {"reminderId": reminder.id, "nextFireAt": reminder.next_fire_at}
