from agentkit import called_tool, define_eval, succeeded

case = define_eval(
    message="What is 17 * 23?",
    assertions=[succeeded(), called_tool("calculate")],
    tags=["smoke"],
)
