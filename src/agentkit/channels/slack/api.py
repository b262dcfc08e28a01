"""The Slack Web API client of the pack (`host.slack`) and the never-fatal calls it makes.

`SlackWebClient` is slack_sdk's `AsyncWebClient` pointed at `SLACK_API_URL` (default Slack's
own), with the SDK's retry handlers for connection errors, 5xx answers and rate limits
(429, waiting `Retry-After`), and the current trace context's `traceparent` on every call
when tracing is on (docs/observability.md). Its token is read from `SLACK_BOT_TOKEN` at
each call when not given, because a deployed host fills that variable from its secret store
only at cold start.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from agentkit.engine.trace_context import outgoing

log = logging.getLogger("agentkit.channels.slack")
DEFAULT_API_URL = "https://slack.com/api/"
TOKEN_ENV = "SLACK_BOT_TOKEN"
API_URL_ENV = "SLACK_API_URL"


def api_base(api_url: str | None = None) -> str:
    """The Web API base URL, always ending in `/` (the SDK appends method names)."""
    url = api_url or os.environ.get(API_URL_ENV) or DEFAULT_API_URL
    return url.rstrip("/") + "/"


def retry_handlers(retries: int = 3) -> list[AsyncRetryHandler]:
    return [
        AsyncConnectionErrorRetryHandler(max_retry_count=retries),
        AsyncServerErrorRetryHandler(max_retry_count=retries),
        AsyncRateLimitErrorRetryHandler(max_retry_count=retries),
    ]


class SlackWebClient(AsyncWebClient):
    """`AsyncWebClient` whose token, when not given, is `SLACK_BOT_TOKEN` at call time."""

    def __init__(
        self, token: str | None = None, api_url: str | None = None, retries: int = 3, **kw: Any
    ) -> None:
        self._given_token: str | None = None
        super().__init__(
            token=token,
            base_url=api_base(api_url),
            retry_handlers=retry_handlers(retries),
            **kw,
        )

    @property
    def token(self) -> str | None:
        return self._given_token or os.environ.get(TOKEN_ENV) or None

    @token.setter
    def token(self, value: str | None) -> None:
        self._given_token = value or None

    async def api_call(
        self, api_method: str, *, headers: dict[str, str] | None = None, **kwargs: Any
    ) -> AsyncSlackResponse:
        """Every Web API call (each SDK method comes here) carries the trace context."""
        return await super().api_call(api_method, headers=outgoing(headers), **kwargs)


async def call(client: AsyncWebClient, method: str, **kwargs: Any) -> dict[str, Any] | None:
    """One Web API call; its answer, or None after logging when it failed (never raises:
    a reply that cannot be posted must not break the agent)."""
    answer, error = await call_or_error(client, method, **kwargs)
    return None if error is not None else answer


async def call_or_error(
    client: AsyncWebClient, method: str, *, quiet: frozenset[str] = frozenset(), **kwargs: Any
) -> tuple[dict[str, Any], str | None]:
    """One Web API call: `(answer, None)`, or `({}, error)` with Slack's error code (or the
    exception's name) after logging it, unless the code is in `quiet` because the caller
    handles it. Never raises."""
    try:
        response = await client.api_call(method, json=kwargs)
    except SlackApiError as exc:
        error = str(exc.response.get("error") or "error")
        if error not in quiet:
            log.error("Slack %s failed: %s", method, error)
        return {}, error
    except (SlackClientError, OSError, TimeoutError) as exc:
        log.error("Slack %s failed: %s", method, exc)
        return {}, type(exc).__name__
    data = response.data
    return (dict(data) if isinstance(data, dict) else {}), None
