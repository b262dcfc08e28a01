"""The GitHub channel pack: pull request reviews through real webhooks.

    # agent/channels/github.py
    from agentkit.channels.github import github_channel

    channel = github_channel(approvers=["octocat"])

It is a channel built only with the public channel runtime: its own auth (the webhook
signature), one route (`POST /v1/channels/<id>`), delivery handlers that post replies, and
`host.github`, a small client for the same API. See docs/channels.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentkit.authoring.channels import ChannelDefinition, OnBusy, define_channel, route
from agentkit.channels.github.client import GitHubClient, GitHubError
from agentkit.channels.github.keys import MARKER, PullRef, parse_key
from agentkit.channels.github.replies import Replies
from agentkit.channels.github.signature import GitHubSignature, sign, verify
from agentkit.channels.github.webhook import Webhook

__all__ = [
    "MARKER",
    "GitHubClient",
    "GitHubError",
    "GitHubSignature",
    "PullRef",
    "github_channel",
    "parse_key",
    "sign",
    "verify",
]


def github_channel(
    *,
    secret: str | None = None,
    token: str | None = None,
    api_url: str | None = None,
    on: Mapping[str, Callable[..., Any]] | None = None,
    approvers: Sequence[str] = (),
    bot_login: str | None = None,
    on_busy: OnBusy = "queue",
    client: GitHubClient | None = None,
    description: str | None = None,
) -> ChannelDefinition:
    """A GitHub webhook channel. Options default from the environment:
    `secret` <- `GITHUB_WEBHOOK_SECRET`, `token` <- `GITHUB_TOKEN`,
    `api_url` <- `GITHUB_API_URL` (default `https://api.github.com`).

    `on={"pull_request.opened": handler}` replaces the default for an event (`handler(
    payload, ctx)` may return `{"task": ...}` or call `ctx.receive`); `approvers` are the
    logins whose `/approve <callId>` and `/deny <callId>` comments count. Messages to a
    PR whose turn is running queue behind it (`on_busy`).
    """
    api = GitHubClient(token=token, api_url=api_url) if client is None else client
    logins = [str(a) for a in approvers]
    webhook = Webhook(api, on=on or {}, approvers=logins, bot_login=bot_login)

    async def deliver(ctx: Any) -> Any:
        return await webhook(ctx)

    return define_channel(
        routes=[route("POST", "/", deliver, description="A GitHub webhook delivery")],
        events=Replies(api, logins).handlers(),
        kind="github",
        description=description or "GitHub pull requests (webhook)",
        auth=GitHubSignature(secret),
        on_busy=on_busy,
        host_extras={"github": api},
    )
