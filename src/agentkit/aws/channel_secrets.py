"""Channel credentials on AWS: read from Secrets Manager or SSM at cold start.

The template names them (`GitHubWebhookSecretName`, `GitHubTokenName`,
`SlackSigningSecretName`, `SlackBotTokenName`); the functions get the names, never the
values, and this module puts the values where the channel packs read them
(`GITHUB_WEBHOOK_SECRET`, `GITHUB_TOKEN`, `SLACK_SIGNING_SECRET`, `SLACK_BOT_TOKEN`) before
any channel is loaded. They live in
the same store as the bearer token (`BearerTokenStore`). A value already in the
environment wins (the local loop sets them directly). A name that cannot be read is
logged; the GitHub channel then refuses deliveries (503) rather than accepting them
unsigned.
"""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping

from agentkit.aws.settings import AwsSettings

log = logging.getLogger("agentkit.aws.channels")

# name variable (set by the template) -> the variable the pack reads
CHANNEL_SECRETS = {
    "AGENTKIT_GITHUB_WEBHOOK_SECRET_NAME": "GITHUB_WEBHOOK_SECRET",
    "AGENTKIT_GITHUB_TOKEN_NAME": "GITHUB_TOKEN",
    "AGENTKIT_SLACK_SIGNING_SECRET_NAME": "SLACK_SIGNING_SECRET",
    "AGENTKIT_SLACK_BOT_TOKEN_NAME": "SLACK_BOT_TOKEN",
}


def read_secret(settings: AwsSettings, name: str) -> str | None:
    """One secret's value, from the store the bearer token uses."""
    from aws_lambda_powertools.utilities import parameters

    from agentkit.aws.clients import client

    if settings.bearer_token_store == "ssm":
        ssm = parameters.SSMProvider(boto3_client=client("ssm", settings))
        value = ssm.get(f"/{name.lstrip('/')}", decrypt=True)
    else:
        secrets = parameters.SecretsProvider(boto3_client=client("secretsmanager", settings))
        value = secrets.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def load_channel_secrets(
    settings: AwsSettings,
    targets: tuple[str, ...],
    env: MutableMapping[str, str] | None = None,
) -> list[str]:
    """Fill the channel variables in `targets` from their named secrets (each function
    reads only what it uses: the API the webhook secret, everyone the token); returns the
    ones filled."""
    env = os.environ if env is None else env
    filled: list[str] = []
    for name_var, target in CHANNEL_SECRETS.items():
        name = env.get(name_var, "").strip()
        if target not in targets or not name or env.get(target):
            continue
        try:
            value = read_secret(settings, name)
        except Exception:  # an unreadable secret leaves the channel refusing, never open
            log.exception("cannot read %s (%s)", name_var, name)
            continue
        if value is None:
            log.error("%s names %s, which is empty", name_var, name)
            continue
        env[target] = value
        filled.append(target)
    return filled
