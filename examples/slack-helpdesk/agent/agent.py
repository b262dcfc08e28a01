from agentkit import define_agent

# No model: the host default applies (the offline `test` model unless configured).
# Two people writing in one thread are both answered, in order (the Slack pack queues).
agent = define_agent(max_steps=8)
