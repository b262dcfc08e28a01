from agentkit import define_eval, succeeded

case = define_eval(
    message="Approve PR #1 please.",
    assertions=[succeeded()],
    tags=["approval"],
    description="approve_pr needs a human's yes, so the turn parks instead of approving.",
)
