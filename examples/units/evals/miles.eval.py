from agentkit import called_tool, define_eval, succeeded

case = define_eval(
    message="How many miles is that?",
    assertions=[succeeded(), called_tool("mcp__units__km_to_miles")],
    tags=["smoke", "mcp"],
    description="The model reaches the units server's tool through the MCP connection.",
)
