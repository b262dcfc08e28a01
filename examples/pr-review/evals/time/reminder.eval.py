"""Time travel: the agent sets a reminder, two hours pass in a millisecond, it wakes up."""

from agentkit.evals import (
    advance,
    call_tool,
    define_eval,
    message_received,
    say,
    succeeded,
    turns_completed,
)

case = define_eval(
    steps=[
        say("Watch the CI of PR #1 for me."),
        call_tool("remind_me", delay="2h", prompt="Check the CI of PR #1 again."),
        advance("1h"),  # not due yet: nothing fires
        advance("1h"),  # due: the reminder follows the conversation up
    ],
    assertions=[
        succeeded(),
        message_received(source="reminder", contains="CI of PR #1"),
        turns_completed(2),
    ],
    tags=["time"],
    description="remind_me wakes the same conversation once the manual clock reaches it.",
)
