"""A client drops its stream mid-turn and resumes from the last index it saw."""

from agentkit.evals import called_tool, define_eval, say, stream_intact, succeeded

case = define_eval(
    steps=[say("What's the weather in Lyon?", cut_after=4)],
    assertions=[succeeded(), called_tool("get_weather", city="Lyon"), stream_intact()],
    tags=["stream"],
)
