"""What the functions read from the environment template.yaml sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.aws.settings import AwsSettings

BASE = {"AGENTKIT_SESSIONS_TABLE": "s", "AGENTKIT_EVENTS_TABLE": "e"}


def test_reads_the_template_environment() -> None:
    settings = AwsSettings.from_env(
        {
            **BASE,
            "AWS_REGION": "eu-west-1",
            "AGENTKIT_SCHEDULE_GROUP": "stack",
            "AGENTKIT_TURN_FUNCTION": "stack-turn",
            "AGENTKIT_AUTH_MODE": "jwt",
            "AGENTKIT_DYNAMODB_ENDPOINT": "",
            "LAMBDA_TASK_ROOT": "/var/task",
        }
    )
    assert settings.region == "eu-west-1"
    assert settings.schedule_group == "stack"
    assert settings.turn_function == "stack-turn"
    assert settings.auth_mode == "jwt"
    assert settings.dynamodb_endpoint is None  # empty means AWS itself
    assert settings.build_dir == Path("/var/task")
    assert settings.bearer_token is None
    assert settings.stream_window < 30  # inside the HTTP API's integration timeout


def test_workspace_bucket_is_optional_and_its_cap_checked() -> None:
    assert AwsSettings.from_env(BASE).workspace_bucket is None  # local folders
    assert AwsSettings.from_env({**BASE, "AGENTKIT_WORKSPACE_BUCKET": ""}).workspace_bucket is None
    settings = AwsSettings.from_env(
        {**BASE, "AGENTKIT_WORKSPACE_BUCKET": "ws", "AGENTKIT_WORKSPACE_MAX_BYTES": "1000"}
    )
    assert (settings.workspace_bucket, settings.workspace_max_bytes) == ("ws", 1000)
    assert AwsSettings.from_env(BASE).workspace_max_bytes == 50 * 1024 * 1024
    for bad in ("0", "-5", "lots"):
        with pytest.raises(RuntimeError, match="AGENTKIT_WORKSPACE_MAX_BYTES"):
            AwsSettings.from_env({**BASE, "AGENTKIT_WORKSPACE_MAX_BYTES": bad})


def test_missing_tables_are_named() -> None:
    with pytest.raises(RuntimeError, match="AGENTKIT_EVENTS_TABLE"):
        AwsSettings.from_env({"AGENTKIT_SESSIONS_TABLE": "s"})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("AGENTKIT_AUTH_MODE", "none"),
        ("AGENTKIT_DISPATCH", "threads"),
        ("AGENTKIT_BEARER_TOKEN_STORE", "vault"),
    ],
)
def test_bad_values_are_refused_with_their_name(key: str, value: str) -> None:
    with pytest.raises(RuntimeError, match=key):
        AwsSettings.from_env({**BASE, key: value})


def test_a_local_endpoint_serves_dynamodb_and_streams_only() -> None:
    settings = AwsSettings(sessions_table="s", events_table="e", dynamodb_endpoint="http://x")
    assert settings.service_endpoint("dynamodb") == "http://x"
    assert settings.service_endpoint("dynamodbstreams") == "http://x"
    assert settings.service_endpoint("scheduler") is None
