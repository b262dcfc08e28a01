from agent.lib.prs import get_pr
from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool


class ApproveInput(BaseModel):
    number: int = Field(ge=1, description="The pull request number")
    comment: str = Field(default="", description="An optional approval comment")


@define_tool(
    description="Approve a pull request. Only after an explicit request; needs a human's approval.",
    needs_approval=True,
)
def approve_pr(input: ApproveInput, ctx: ToolContext) -> dict[str, object]:
    pr = get_pr(input.number)
    if pr["checks"] != "passed":
        return {"number": input.number, "approved": False, "reason": "checks have not passed"}
    return {"number": input.number, "approved": True}
