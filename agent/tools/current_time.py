from datetime import UTC, datetime

from pydantic import BaseModel

from agentkit import ToolContext, define_tool


class NoInput(BaseModel):
    pass


@define_tool(description="The current date and time in UTC (ISO 8601) and the weekday.")
def current_time(input: NoInput, ctx: ToolContext) -> dict[str, str]:
    now = datetime.now(UTC)
    return {"utc": now.isoformat(timespec="seconds"), "weekday": now.strftime("%A")}
