from agentkit import approval_requested, define_eval, turns_completed

case = define_eval(
    message="Please reset the password of sam.",
    assertions=[approval_requested("reset_password"), turns_completed(0)],
    tags=["approval"],
    description="A password reset waits for an approver's click instead of running.",
)
