from agentkit import called_tool, define_eval, reply_contains, succeeded

case = define_eval(
    message="What's the weather in Paris?",
    assertions=[succeeded(), called_tool("get_weather", city="Paris"), reply_contains("simulated")],
    tags=["smoke"],
)
