"""What the Lambda functions read from their environment (set by template.yaml).

One frozen object, built once per cold start, so every handler and adapter agrees on the
table names, the schedule group and the function names, and tests can build one by hand.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

AuthMode = Literal["bearer", "iam", "jwt"]
DispatchMode = Literal["lambda", "inline"]


@dataclass(frozen=True, slots=True)
class AwsSettings:
    """The deployed shape of one stack, as the functions see it."""

    sessions_table: str
    events_table: str
    region: str = "us-east-1"
    dynamodb_endpoint: str | None = None  # a local DynamoDB-API server; None on AWS
    endpoint_url: str | None = None  # one local endpoint for every service (tests, moto)
    schedule_group: str = "agentkit"
    scheduler_target_arn: str = ""
    scheduler_role_arn: str = ""
    turn_function: str = ""
    dispatch: DispatchMode = "lambda"
    auth_mode: AuthMode = "bearer"
    bearer_token_store: Literal["secretsmanager", "ssm"] = "secretsmanager"
    bearer_token_name: str = "agentkit/bearer-token"
    bearer_token: str | None = None  # local loop only; never set when deployed
    build_dir: Path = Path(".")
    stage: str = "prod"
    # API Gateway's HTTP API ends an integration at 30 s; a stream answers before that.
    stream_window: float = 25.0
    # DynamoDB cannot notify: a waiting stream polls the events table, from every 50 ms
    # backing off to this while nothing comes. It bounds how late a quiet session's next
    # event is seen (p95 <= 300 ms), at about 1/stream_poll_max reads a second per waiting
    # client (5 by default, one read unit each).
    stream_poll_max: float = 0.2
    # Session workspaces in S3 (agentkit.aws.workspace); None keeps local folders
    # (`sam local`, tests).
    workspace_bucket: str | None = None
    workspace_max_bytes: int = 50 * 1024 * 1024
    # Seconds a turn keeps in hand before its invocation's end: less than this left and it
    # continues in a new invocation (the longest model step expected plus a safety margin).
    turn_margin: float = 120.0
    # Served by `agentkit serve --emulate-aws` (agentkit.emulator), not by AWS.
    emulated: bool = False
    # The SSM parameter that is the agent's kill switch (`aws.pause_switch`); "" for none.
    pause_parameter: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AwsSettings:
        """Read the settings template.yaml sets; raise a clear error for missing ones."""
        env = os.environ if env is None else env
        missing = [
            k for k in ("AGENTKIT_SESSIONS_TABLE", "AGENTKIT_EVENTS_TABLE") if not env.get(k)
        ]
        if missing:
            raise RuntimeError(f"missing environment variables: {', '.join(missing)}")
        auth = env.get("AGENTKIT_AUTH_MODE", "bearer")
        if auth not in ("bearer", "iam", "jwt"):
            raise RuntimeError(f"AGENTKIT_AUTH_MODE must be bearer, iam or jwt, not {auth!r}")
        dispatch = env.get("AGENTKIT_DISPATCH", "lambda")
        if dispatch not in ("lambda", "inline"):
            raise RuntimeError(f"AGENTKIT_DISPATCH must be lambda or inline, not {dispatch!r}")
        store = env.get("AGENTKIT_BEARER_TOKEN_STORE", "secretsmanager")
        if store not in ("secretsmanager", "ssm"):
            raise RuntimeError("AGENTKIT_BEARER_TOKEN_STORE must be secretsmanager or ssm")
        return cls(
            sessions_table=env["AGENTKIT_SESSIONS_TABLE"],
            events_table=env["AGENTKIT_EVENTS_TABLE"],
            region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            dynamodb_endpoint=env.get("AGENTKIT_DYNAMODB_ENDPOINT") or None,
            endpoint_url=env.get("AGENTKIT_AWS_ENDPOINT") or None,
            schedule_group=env.get("AGENTKIT_SCHEDULE_GROUP", "agentkit"),
            scheduler_target_arn=env.get("AGENTKIT_SCHEDULER_TARGET_ARN", ""),
            scheduler_role_arn=env.get("AGENTKIT_SCHEDULER_ROLE_ARN", ""),
            turn_function=env.get("AGENTKIT_TURN_FUNCTION", ""),
            dispatch=dispatch,  # type: ignore[arg-type]
            auth_mode=auth,  # type: ignore[arg-type]
            bearer_token_store=store,  # type: ignore[arg-type]
            bearer_token_name=env.get("AGENTKIT_BEARER_TOKEN_NAME", "agentkit/bearer-token"),
            bearer_token=env.get("AGENTKIT_BEARER_TOKEN") or None,
            build_dir=Path(env.get("AGENTKIT_BUILD_DIR") or env.get("LAMBDA_TASK_ROOT") or "."),
            stage=env.get("AGENTKIT_STAGE", "prod"),
            stream_window=float(env.get("AGENTKIT_STREAM_WINDOW", "25")),
            stream_poll_max=_seconds(env, "AGENTKIT_STREAM_POLL_MAX", 0.2) or 0.2,
            workspace_bucket=env.get("AGENTKIT_WORKSPACE_BUCKET") or None,
            workspace_max_bytes=_positive_int(env, "AGENTKIT_WORKSPACE_MAX_BYTES", 50 << 20),
            turn_margin=_seconds(env, "AGENTKIT_TURN_MARGIN", 120.0),
            emulated=env.get("AGENTKIT_EMULATED") == "1",
            pause_parameter=env.get("AGENTKIT_PAUSE_PARAMETER", ""),
        )

    def service_endpoint(self, service: str) -> str | None:
        """The endpoint a client for `service` talks to (None: the AWS default)."""
        if service in ("dynamodb", "dynamodbstreams") and self.dynamodb_endpoint:
            return self.dynamodb_endpoint
        return self.endpoint_url


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:  # also refuses NaN
        raise RuntimeError(f"{name} must be a number of seconds, not {raw!r}")
    return value


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise RuntimeError(f"{name} must be a positive number of bytes, not {raw!r}")
    return value
