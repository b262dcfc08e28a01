from agentkit import called_tool, define_eval, succeeded

case = define_eval(
    message="What is PR #1 about?",
    assertions=[succeeded(), called_tool("inspect_pr")],
    tags=["smoke"],
)
