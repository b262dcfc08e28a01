from agent.lib.prs import get_pr
from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool


class CommentInput(BaseModel):
    number: int = Field(ge=1, description="The pull request number")
    body: str = Field(min_length=1, description="The comment, in markdown")
    request_changes: bool = Field(default=False, description="Block the merge until fixed")


def _blocks_merge(input: CommentInput) -> bool:
    # Plain comments go out directly; a blocking review needs a human's yes.
    return input.request_changes


@define_tool(
    description="Post a review comment on a pull request (blocking reviews need approval).",
    needs_approval=_blocks_merge,
)
def post_comment(input: CommentInput, ctx: ToolContext) -> dict[str, object]:
    pr = get_pr(input.number)
    return {"number": pr["number"], "posted": True, "requestChanges": input.request_changes}
