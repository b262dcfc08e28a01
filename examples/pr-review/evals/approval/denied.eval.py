from agentkit.evals import define_eval, deny, say, succeeded, turns_completed

case = define_eval(
    steps=[say("Approve PR #1 please."), deny()],
    assertions=[succeeded(), turns_completed(1)],
    tags=["approval"],
    description="A denied call never runs; the turn still ends cleanly.",
)
