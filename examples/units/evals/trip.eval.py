from agentkit import called_tool, define_eval, reply_contains, succeeded

case = define_eval(
    message="Give me a trip summary.",
    assertions=[succeeded(), called_tool("trip_summary"), reply_contains("fahrenheit")],
    tags=["smoke", "mcp"],
    description="A typed tool calls the MCP server from inside the agent.",
)
