"""The agent this repository deploys (replace agent/ with your own).

The repository's pyproject.toml names the *framework* (`agentkit`), so the agent sets its
own display name here; `name=` in define_agent wins over pyproject's [project].name.
"""

from agentkit import define_agent

# No model here: the deployment's AgentModel parameter (or AGENTKIT_MODEL) picks it, and
# without either the offline `test` model answers.
agent = define_agent(name="assistant", max_steps=10)
