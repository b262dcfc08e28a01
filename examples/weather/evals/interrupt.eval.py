"""A follow-up sent while the first turn runs: the user changes their mind mid-answer.

The running turn is cut short (`turn.failed`, "turn interrupted"), or, if it finished
first, the message is an ordinary follow-up; either way the last turn answers Oslo.
"""

from agentkit.evals import Trajectory, called_tool, define_eval, interrupt, reply_contains, say


def last_turn_completed(t: Trajectory) -> bool | str:
    ends = [e.type for e in t.events if e.type in ("turn.completed", "turn.failed")]
    return ends[-1:] == ["turn.completed"] or f"turn ends: {ends}"


case = define_eval(
    steps=[
        say("What's the weather in Paris?"),
        interrupt("Actually, the weather in Oslo?", after="turn.started"),
    ],
    assertions=[
        last_turn_completed,
        called_tool("get_weather", city="Oslo"),
        reply_contains("Oslo"),
    ],
    tags=["conversation", "interrupt"],
)
