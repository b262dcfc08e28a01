from agentkit import define_agent

agent = define_agent(
    description=(
        "Line-by-line review of large pull requests: reads the changed files and returns "
        "prioritized findings."
    ),
    # model: omitted, so the reviewer inherits the parent's model
)
