from agentkit import called_tool, define_eval, succeeded

case = define_eval(
    message="Inspect PR #1 please.",
    assertions=[succeeded(), called_tool("inspect_pr", number=1)],
    tags=["smoke"],
)
