"""The agent this repository deploys (replace agent/ with your own).

The repository's pyproject.toml names the *framework* (`agentkit`), so the agent sets its
own display name here; `name=` in define_agent wins over pyproject's [project].name.
"""

from agentkit import define_agent

# No model here. The model is, first to last: the AGENTKIT_MODEL environment variable
# (which the deployment's ModelId parameter sets on AWS), a `model=` given here, and the
# offline `test` model.
agent = define_agent(name="assistant", max_steps=10)
