from pydantic import BaseModel, Field

from agentkit import ToolContext, define_tool


class TripInput(BaseModel):
    km: float = Field(description="Distance in kilometres")
    celsius: float = Field(description="Temperature at the destination in Celsius")


@define_tool(description="Summarise a trip in miles and Fahrenheit (uses the units server).")
async def trip_summary(input: TripInput, ctx: ToolContext) -> dict:
    if ctx.host.mcp is None:
        return {"error": "MCP connections are not available on this host"}
    miles = await ctx.host.mcp.call_tool("units", "km_to_miles", {"km": input.km})
    fahrenheit = await ctx.host.mcp.call_tool(
        "units", "celsius_to_fahrenheit", {"celsius": input.celsius}
    )
    return {"miles": miles["result"], "fahrenheit": fahrenheit["result"]}
