from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool


class ResetInput(BaseModel):
    account: str = Field(description="The account whose password to reset")


@define_tool(description="Reset an account's password and send a reset link.", needs_approval=True)
async def reset_password(input: ResetInput, ctx: ToolContext) -> dict:
    # A real helpdesk calls its identity provider here. It runs only after an approver's
    # click on the Approve button in the thread.
    ctx.logger.info("password reset for %s", input.account)
    return {"account": input.account, "resetLinkSent": True}
