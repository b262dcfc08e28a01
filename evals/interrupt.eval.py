"""A follow-up sent while a turn runs (the interrupt path); the newer message is answered.

Whether the first turn is cut short or has just ended depends on timing, so this case
asserts what holds either way: the follow-up arrived and the last reply answers it.
"""

from agentkit.evals import called_tool, define_eval, interrupt, message_received, say

case = define_eval(
    steps=[say("What is 2 + 2?"), interrupt("Actually, calculate 6 * 7.")],
    assertions=[message_received(contains="6 * 7"), called_tool("calculate")],
    tags=["interrupt"],
)
