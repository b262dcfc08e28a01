"""Channel credentials at cold start: read by name from SSM or Secrets Manager (the moto
server over HTTP), only the ones a function asks for, never overriding a set value, and an
unreadable one leaving the GitHub channel refusing deliveries rather than open."""

from __future__ import annotations

import logging
import uuid

import pytest

from agentkit.aws.channel_secrets import load_channel_secrets
from agentkit.aws.clients import client
from agentkit.aws.settings import AwsSettings
from agentkit.channels.github.signature import ChannelMisconfigured, GitHubSignature


def settings_for(endpoint: str, store: str) -> AwsSettings:
    return AwsSettings(
        sessions_table="unused",
        events_table="unused",
        endpoint_url=endpoint,
        bearer_token_store=store,  # type: ignore[arg-type]
    )


def test_ssm_parameters_fill_only_the_asked_variables(dynamodb_endpoint: str) -> None:
    settings = settings_for(dynamodb_endpoint, "ssm")
    prefix = f"gh{uuid.uuid4().hex[:8]}"
    ssm = client("ssm", settings)
    ssm.put_parameter(Name=f"/{prefix}/webhook", Value="ssm-webhook", Type="SecureString")
    ssm.put_parameter(Name=f"/{prefix}/token", Value="ssm-token\n", Type="SecureString")
    env = {
        "AGENTKIT_GITHUB_WEBHOOK_SECRET_NAME": f"{prefix}/webhook",
        "AGENTKIT_GITHUB_TOKEN_NAME": f"{prefix}/token",
    }
    # The turn and hooks functions ask for the token only: the webhook secret stays unread.
    assert load_channel_secrets(settings, ("GITHUB_TOKEN",), env) == ["GITHUB_TOKEN"]
    assert env["GITHUB_TOKEN"] == "ssm-token" and "GITHUB_WEBHOOK_SECRET" not in env
    # The API function asks for the secret; a value already set (the token) is kept.
    env["GITHUB_TOKEN"] = "set-directly"
    filled = load_channel_secrets(settings, ("GITHUB_WEBHOOK_SECRET", "GITHUB_TOKEN"), env)
    assert filled == ["GITHUB_WEBHOOK_SECRET"]
    assert env["GITHUB_WEBHOOK_SECRET"] == "ssm-webhook" and env["GITHUB_TOKEN"] == "set-directly"


def test_an_unreadable_secret_leaves_the_channel_refusing(
    dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_for(dynamodb_endpoint, "secretsmanager")
    monkeypatch.delenv("GITHUB_WEBHOOK_SECRET", raising=False)
    env = {"AGENTKIT_GITHUB_WEBHOOK_SECRET_NAME": f"missing-{uuid.uuid4().hex[:8]}"}
    with caplog.at_level(logging.ERROR, logger="agentkit.aws.channels"):
        assert load_channel_secrets(settings, ("GITHUB_WEBHOOK_SECRET",), env) == []
    assert "GITHUB_WEBHOOK_SECRET" not in env
    assert any("AGENTKIT_GITHUB_WEBHOOK_SECRET_NAME" in r.getMessage() for r in caplog.records)
    with pytest.raises(ChannelMisconfigured):
        GitHubSignature().check_deployable()
