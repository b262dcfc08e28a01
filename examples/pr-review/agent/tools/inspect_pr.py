from agent.lib.prs import get_pr
from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool


class InspectInput(BaseModel):
    number: int = Field(ge=1, description="The pull request number")


@define_tool(description="Show one pull request: title, author, CI checks and changed files.")
async def inspect_pr(input: InspectInput, ctx: ToolContext) -> dict[str, object]:
    return get_pr(input.number)
