from agentkit import define_agent

# No model: the host default applies (the offline `test` model unless configured).
agent = define_agent(max_steps=15)
