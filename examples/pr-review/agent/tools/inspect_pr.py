from agent.lib.prs import get_pr
from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool
from agentkit.channels.github import parse_key


class InspectInput(BaseModel):
    number: int = Field(ge=1, description="The pull request number")


@define_tool(description="Show one pull request: title, author, CI checks and changed files.")
async def inspect_pr(input: InspectInput, ctx: ToolContext) -> dict[str, object]:
    ref = parse_key(ctx.session.continuation_key if ctx.session else None)
    github = getattr(ctx.host, "github", None)
    if ref is not None and github is not None:
        # A GitHub conversation: read the real pull request of its repository.
        pr = await github.get_pr(ref.owner, ref.repo, input.number)
        return {
            "number": pr.get("number"),
            "title": pr.get("title"),
            "author": (pr.get("user") or {}).get("login"),
            "head": (pr.get("head") or {}).get("sha"),
            "additions": pr.get("additions"),
            "deletions": pr.get("deletions"),
            "changedFiles": pr.get("changed_files"),
        }
    return get_pr(input.number)
