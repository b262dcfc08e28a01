"""A small GitHub REST client (`host.github`): comments, reactions, pull requests.

Requests are retried on 5xx and rate-limit answers (429, or 403 with no requests left),
with exponential backoff that honours `Retry-After` (capped); other errors raise
`GitHubError` at once. The sleep is injectable so tests never wait on a clock.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from agentkit.engine.trace_context import outgoing

log = logging.getLogger("agentkit.channels.github")
DEFAULT_API_URL = "https://api.github.com"
MAX_RETRY_AFTER = 30.0


class GitHubError(RuntimeError):
    """A GitHub API request failed (after retries, where retrying made sense)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _retryable(response: httpx.Response) -> bool:
    if response.status_code >= 500 or response.status_code == 429:
        return True
    return response.status_code == 403 and response.headers.get("x-ratelimit-remaining") == "0"


class GitHubClient:
    """Authenticated calls to `api_url` with `token` (a PAT or an installation token)."""

    def __init__(
        self,
        token: str | None = None,
        api_url: str | None = None,
        *,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float = 10.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.token = token if token is not None else os.environ.get("GITHUB_TOKEN")
        self.api_url = (api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self._sleep = sleep
        self._transport = transport

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "agentkit",
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return outgoing(headers)

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        retries: int | None = None,
        timeout: float | None = None,
    ) -> Any:
        """One API call; the decoded JSON answer (None for an empty one). `retries` and
        `timeout` override the client's for this call (a webhook request keeps its own
        GitHub calls short: GitHub gives up on a delivery after 10 s)."""
        attempts = 1 + (self.retries if retries is None else retries)
        last: str = ""
        async with httpx.AsyncClient(
            base_url=self.api_url,
            timeout=self.timeout if timeout is None else timeout,
            transport=self._transport,
        ) as http:
            for attempt in range(attempts):
                try:
                    response = await http.request(method, path, json=json, headers=self._headers())
                except httpx.TransportError as exc:
                    last, status = f"{type(exc).__name__}: {exc}", None
                else:
                    if response.is_success:
                        return response.json() if response.content else None
                    status = response.status_code
                    last = f"{status} {response.text[:200]}"
                    if not _retryable(response):
                        raise GitHubError(f"{method} {path}: {last}", status)
                if attempt + 1 < attempts:
                    await self._sleep(self._delay(attempt, response if status else None))
        raise GitHubError(f"{method} {path} failed after {attempts} attempts: {last}", status)

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            after = response.headers.get("retry-after")
            if after and after.isdigit():
                return min(float(after), MAX_RETRY_AFTER)
        return float(self.backoff * (2**attempt))

    async def comment(self, owner: str, repo: str, number: int, body: str) -> dict[str, Any]:
        """Post an issue comment (pull requests are issues for comments)."""
        result: dict[str, Any] = await self.request(
            "POST", f"/repos/{owner}/{repo}/issues/{number}/comments", json={"body": body}
        )
        return result

    async def react(
        self, owner: str, repo: str, comment_id: int, content: str, *, timeout: float | None = None
    ) -> None:
        """Add a reaction (`+1`, `-1`, `confused`, `eyes`, ...) to an issue comment; one try."""
        await self.request(
            "POST",
            f"/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
            json={"content": content},
            retries=0,
            timeout=timeout,
        )

    async def get_pr(
        self,
        owner: str,
        repo: str,
        number: int,
        *,
        retries: int | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """A pull request (`head.sha`, `title`, `user`, ...)."""
        result: dict[str, Any] = await self.request(
            "GET", f"/repos/{owner}/{repo}/pulls/{number}", retries=retries, timeout=timeout
        )
        return result
