from agent.lib.prs import PULL_REQUESTS
from pydantic import BaseModel

from agentkit import ToolContext, define_tool


class NoInput(BaseModel):
    pass


@define_tool(description="List the open pull requests (number, title, author, checks).")
def list_open_prs(input: NoInput, ctx: ToolContext) -> list[dict[str, object]]:
    return [
        {"number": n, "title": pr["title"], "author": pr["author"], "checks": pr["checks"]}
        for n, pr in sorted(PULL_REQUESTS.items())
    ]
