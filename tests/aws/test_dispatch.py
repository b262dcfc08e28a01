"""The Lambda dispatcher against the Lambda API of the moto server.

moto accepts asynchronous invokes (202) but cannot run the function (that needs a container
engine), so the flow tests capture the payload instead; here the call itself is checked."""

from __future__ import annotations

import io
import zipfile

import pytest

from agentkit.aws.clients import client
from agentkit.aws.dispatchers import LambdaDispatcher
from agentkit.aws.handlers import _common
from agentkit.aws.settings import AwsSettings


@pytest.fixture
def lambda_settings(dynamodb_endpoint: str) -> AwsSettings:
    return AwsSettings(sessions_table="s", events_table="e", endpoint_url=dynamodb_endpoint)


def _create_function(settings: AwsSettings, name: str) -> None:
    role = client("iam", settings).create_role(
        RoleName=f"{name}-role", AssumeRolePolicyDocument="{}"
    )
    package = io.BytesIO()
    with zipfile.ZipFile(package, "w") as z:
        z.writestr("h.py", "def handler(event, context):\n    return event\n")
    client("lambda", settings).create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role["Role"]["Arn"],
        Handler="h.handler",
        Code={"ZipFile": package.getvalue()},
    )


def test_dispatch_is_an_asynchronous_invoke(lambda_settings: AwsSettings) -> None:
    _create_function(lambda_settings, "stack-turn-a")
    calls: list[dict[str, object]] = []
    lam = client("lambda", lambda_settings)
    lam.meta.events.register(
        "before-call.lambda.Invoke", lambda params, **_: calls.append(params), unique_id="spy"
    )
    try:
        _common.run(LambdaDispatcher(lam, "stack-turn-a").dispatch("ses_x", "turn_y"))
    finally:
        lam.meta.events.unregister("before-call.lambda.Invoke", unique_id="spy")
    (call,) = calls
    assert call["headers"]["X-Amz-Invocation-Type"] == "Event"  # type: ignore[index]
    assert call["body"] == b'{"sessionId": "ses_x", "turnId": "turn_y"}'


def test_dispatch_to_a_missing_function_raises(lambda_settings: AwsSettings) -> None:
    lam = client("lambda", lambda_settings)
    with pytest.raises(lam.exceptions.ResourceNotFoundException):
        _common.run(LambdaDispatcher(lam, "no-such-function").dispatch("ses_x", "turn_y"))
