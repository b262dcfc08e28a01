from agentkit import define_ab_config

config = define_ab_config(max_playground_sessions=50)
