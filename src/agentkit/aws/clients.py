"""boto3 clients for the functions: created once per cold start, standard retry mode."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from agentkit.aws.settings import AwsSettings


@lru_cache(maxsize=16)
def client(service: str, settings: AwsSettings) -> Any:
    """A boto3 client for `service`, cached per settings (clients are thread-safe)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,  # type: ignore[call-overload]
        region_name=settings.region,
        endpoint_url=settings.service_endpoint(service),
        config=Config(retries={"mode": "standard", "max_attempts": 5}),
    )
