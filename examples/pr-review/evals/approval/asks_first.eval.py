from agentkit import approval_requested, define_eval, turns_completed

case = define_eval(
    message="Approve PR #1 please.",
    assertions=[approval_requested("approve_pr"), turns_completed(0)],
    tags=["approval"],
    description="approve_pr needs a human's yes, so the turn parks instead of approving.",
)
