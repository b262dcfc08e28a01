from agentkit.evals import approve, called_tool, define_eval, reply_contains, say, succeeded

case = define_eval(
    steps=[say("Please reset the password of sam."), approve("reset_password")],
    assertions=[succeeded(), called_tool("reset_password"), reply_contains("resetLinkSent")],
    tags=["approval"],
    description="Once an approver says yes, the reset runs and the agent reports it.",
)
