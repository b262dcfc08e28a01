from agentkit import define_agent

agent = define_agent(max_steps=6)
