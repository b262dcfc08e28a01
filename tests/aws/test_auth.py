"""Deployed auth: a bearer token from Secrets Manager or SSM (cached), or the principal an
API Gateway authorizer put in the request context. Never open by default."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any

import pytest
from starlette.requests import Request

from agentkit.aws.auth import (
    CachedTokens,
    GatewayPrincipal,
    SecretBearerAuth,
    auth_chain,
    parse_tokens,
    secret_token_source,
)
from agentkit.aws.settings import AwsSettings
from agentkit.errors import Unauthorized
from agentkit.server.auth import AuthChain, bearer_principal_id
from tests.aws.conftest import load_event


def request(event: dict[str, Any], token: str | None = None) -> Request:
    headers = [] if token is None else [(b"authorization", f"Bearer {token}".encode())]
    return Request({"type": "http", "headers": headers, "aws.event": event})


@pytest.fixture
def settings(dynamodb_endpoint: str) -> AwsSettings:
    return AwsSettings(
        sessions_table="s",
        events_table="e",
        endpoint_url=dynamodb_endpoint,
        bearer_token_name=f"agentkit/test-{uuid.uuid4().hex[:8]}",
    )


def test_token_from_secrets_manager_admits_its_holder(settings: AwsSettings) -> None:
    from agentkit.aws.clients import client

    client("secretsmanager", settings).create_secret(
        Name=settings.bearer_token_name, SecretString="s3cret"
    )
    chain = auth_chain(settings)
    principal = chain.authenticate(request({}, "s3cret"))
    assert principal.id == bearer_principal_id("s3cret")
    with pytest.raises(Unauthorized):
        chain.authenticate(request({}, "wrong"))
    with pytest.raises(Unauthorized):
        chain.authenticate(request({}))


def test_token_from_ssm_secure_string(settings: AwsSettings) -> None:
    from agentkit.aws.clients import client

    ssm_settings = replace(settings, bearer_token_store="ssm")
    client("ssm", ssm_settings).put_parameter(
        Name=f"/{settings.bearer_token_name}", Value='{"tokens": ["a", "b"]}', Type="SecureString"
    )
    chain = auth_chain(ssm_settings)
    assert chain.authenticate(request({}, "b")).id == bearer_principal_id("b")


def test_missing_secret_refuses_everyone(settings: AwsSettings) -> None:
    chain = auth_chain(settings)  # no secret was ever created
    with pytest.raises(Unauthorized):
        chain.authenticate(request({}, "anything"))


def test_tokens_are_cached_until_max_age() -> None:
    reads: list[int] = []
    now = [0.0]

    def source() -> list[str]:
        reads.append(1)
        return [f"t{len(reads)}"]

    cached = CachedTokens(source, max_age=300, clock=lambda: now[0])
    assert cached.tokens() == ["t1"]
    now[0] = 299
    assert cached.tokens() == ["t1"]
    now[0] = 301
    assert cached.tokens() == ["t2"]  # a rotated secret takes effect
    assert len(reads) == 2


def test_secret_value_forms() -> None:
    assert parse_tokens("abc\n") == ["abc"]
    assert parse_tokens('{"token": "x"}') == ["x"]
    assert parse_tokens('{"tokens": ["x", "", 3, "y"]}') == ["x", "y"]
    assert parse_tokens("") == [] and parse_tokens(None) == []
    assert parse_tokens("{not json") == []


@pytest.mark.parametrize(
    "secret",
    [
        '{"tokens": "s3cr3t-long-token"}',
        '{"tokens": {"abc": 1}}',
        '{"token": ["x"]}',
        '["x", "y"]',
    ],
)
def test_a_malformed_secret_admits_no_one(secret: str) -> None:
    assert parse_tokens(secret) == []


def test_iam_principal_comes_from_the_request_context() -> None:
    event = load_event("api/create-session-iam.json")
    principal = GatewayPrincipal("iam").admit(request(event))
    assert principal is not None
    # The role, not the RoleSessionName ("alice"), which the caller picks when assuming it.
    assert principal.id == "iam:arn:aws:sts::123456789012:assumed-role/agent-callers"


def test_an_assumed_role_session_name_cannot_pick_another_principal() -> None:
    event = load_event("api/create-session-iam.json")
    iam = event["requestContext"]["authorizer"]["iam"]
    as_bob = {
        **iam,
        "userArn": iam["userArn"].rsplit("/", 1)[0] + "/bob",
        "callerId": iam["callerId"].split(":", 1)[0] + ":bob",
    }
    forged = {**event, "requestContext": {**event["requestContext"], "authorizer": {"iam": as_bob}}}
    mine = GatewayPrincipal("iam").admit(request(event))
    named = GatewayPrincipal("iam").admit(request(forged))
    assert mine is not None and named is not None
    assert named.id == mine.id  # the same role: no session name selects someone's sessions
    user = {**iam, "userArn": "arn:aws:iam::123456789012:user/carol"}
    as_user = {**event, "requestContext": {**event["requestContext"], "authorizer": {"iam": user}}}
    carol = GatewayPrincipal("iam").admit(request(as_user))
    assert carol is not None and carol.id == "iam:arn:aws:iam::123456789012:user/carol"


def test_jwt_principal_is_issuer_and_subject() -> None:
    event = load_event("api/create-session-jwt.json")
    principal = GatewayPrincipal("jwt").admit(request(event))
    assert principal is not None
    assert principal.id == "jwt:https://issuer.example.com/#user-1234"


def test_gateway_modes_refuse_requests_without_an_authorizer_context() -> None:
    settings = AwsSettings(sessions_table="s", events_table="e", auth_mode="iam")
    with pytest.raises(Unauthorized):
        auth_chain(settings).authenticate(request(load_event("api/create-session.json")))


def test_secret_source_reads_through_powertools(settings: AwsSettings) -> None:
    from agentkit.aws.clients import client

    client("secretsmanager", settings).create_secret(
        Name=settings.bearer_token_name, SecretString=json.dumps({"token": "p"})
    )
    assert secret_token_source(settings)() == ["p"]


def test_a_secret_that_cannot_be_read_keeps_the_last_good_tokens(settings: AwsSettings) -> None:
    """Through Powertools and boto3 against the Secrets Manager API: a read that fails
    (here the secret is gone) keeps callers in; the next read, seconds later, rotates."""
    from agentkit.aws.clients import client

    secrets = client("secretsmanager", settings)
    name = settings.bearer_token_name
    secrets.create_secret(Name=name, SecretString="tok-1")
    now = [0.0]
    tokens = CachedTokens(
        secret_token_source(settings, max_age=0),  # Powertools' own cache off: every read real
        max_age=300,
        retry_after=5,
        clock=lambda: now[0],
    )
    chain = AuthChain([SecretBearerAuth(tokens)])
    assert chain.authenticate(request({}, "tok-1")).id == bearer_principal_id("tok-1")

    secrets.delete_secret(SecretId=name, ForceDeleteWithoutRecovery=True)
    now[0] = 301  # due for a re-read, which fails
    assert chain.authenticate(request({}, "tok-1")).id == bearer_principal_id("tok-1")

    secrets.create_secret(Name=name, SecretString="tok-2")
    now[0] = 303  # the retry is not due yet
    assert chain.authenticate(request({}, "tok-1")).id == bearer_principal_id("tok-1")
    now[0] = 307  # retried within seconds, not after another max_age
    assert chain.authenticate(request({}, "tok-2")).id == bearer_principal_id("tok-2")
    with pytest.raises(Unauthorized):
        chain.authenticate(request({}, "tok-1"))
