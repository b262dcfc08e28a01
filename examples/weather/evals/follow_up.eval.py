from agentkit import called_tool, define_eval, succeeded, turns_completed

case = define_eval(
    message=["What's the weather in Paris?", "And the weather in Oslo?"],
    assertions=[succeeded(), called_tool("get_weather", city="Oslo"), turns_completed(2)],
    tags=["conversation"],
)
