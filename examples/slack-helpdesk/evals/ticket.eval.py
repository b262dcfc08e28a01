from agentkit import called_tool, define_eval, succeeded

case = define_eval(
    message="Can you look up ticket IT-1?",
    assertions=[succeeded(), called_tool("look_up_ticket")],
    tags=["smoke"],
    description="A ticket question is answered from the ticket system.",
)
