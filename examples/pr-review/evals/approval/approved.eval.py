from agentkit.evals import approve, called_tool, define_eval, reply_contains, say, succeeded

case = define_eval(
    steps=[say("Approve PR #1 please."), approve("approve_pr")],
    assertions=[succeeded(), called_tool("approve_pr", number=1), reply_contains("approved")],
    tags=["approval"],
    description="Once a human approves, the parked call runs and the agent reports it.",
)
