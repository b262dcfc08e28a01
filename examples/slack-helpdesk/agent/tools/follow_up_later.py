from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool


class FollowUpInput(BaseModel):
    delay: str = Field(default="1h", description="When to check back, such as 30m or 1d")
    note: str = Field(default="Check whether the issue is solved.")


@define_tool(description="Check back in this thread later (a reminder).")
async def follow_up_later(input: FollowUpInput, ctx: ToolContext) -> dict:
    # Created from a Slack thread's session, the reminder fires back into the same thread.
    made = await ctx.host.reminders.create(
        purpose="follow_up", prompt=input.note, delay=input.delay
    )
    return {"reminderId": made.id, "in": input.delay}
