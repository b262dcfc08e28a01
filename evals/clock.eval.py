"""The manual clock: a day passes in a step; the agent's tools see the session go on."""

from agentkit.evals import advance, called_tool, define_eval, say, succeeded, turns_completed

case = define_eval(
    steps=[say("What is 3 * 5?"), advance("1d"), say("And what is 10 / 4?")],
    assertions=[succeeded(), called_tool("calculate"), turns_completed(2)],
    tags=["time"],
)
