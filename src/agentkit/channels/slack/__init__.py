"""The Slack channel pack: an agent in Slack threads, with approvals as buttons.

    # agent/channels/slack.py
    from agentkit.channels.slack import slack_channel

    channel = slack_channel(approvers=["U012AB3CD"])

Built only on the public channel runtime: its own auth (Slack's request signature), two
routes (`POST /v1/channels/<id>/events` for the Events API, `POST /v1/channels/<id>/
interactions` for button clicks), delivery handlers that stream or post into the thread,
and `host.slack`, the authenticated Web API client. See docs/slack.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slack_sdk.signature import Clock
from slack_sdk.web.async_client import AsyncWebClient

from agentkit.authoring.channels import ChannelDefinition, OnBusy, define_channel, route
from agentkit.channels.slack.api import SlackWebClient
from agentkit.channels.slack.events import Events
from agentkit.channels.slack.interactions import Interactions
from agentkit.channels.slack.keys import ThreadRef, parse_key, thread_key
from agentkit.channels.slack.mrkdwn import split, to_mrkdwn
from agentkit.channels.slack.replies import Replies
from agentkit.channels.slack.signature import SlackSignature
from agentkit.channels.slack.stream import DEFAULT_INTERVAL, DEFAULT_SIZE, Recipient

__all__ = [
    "SlackSignature",
    "SlackWebClient",
    "ThreadRef",
    "parse_key",
    "slack_channel",
    "split",
    "thread_key",
    "to_mrkdwn",
]


def slack_channel(
    *,
    signing_secret: str | None = None,
    bot_token: str | None = None,
    api_url: str | None = None,
    approvers: Sequence[str] = (),
    bot_user_id: str | None = None,
    on_busy: OnBusy = "queue",
    stream: bool = True,
    stream_interval: float = DEFAULT_INTERVAL,
    stream_size: int = DEFAULT_SIZE,
    client: AsyncWebClient | None = None,
    clock: Clock | None = None,
    description: str | None = None,
) -> ChannelDefinition:
    """A Slack app channel. Options default from the environment:
    `signing_secret` <- `SLACK_SIGNING_SECRET`, `bot_token` <- `SLACK_BOT_TOKEN`,
    `api_url` <- `SLACK_API_URL` (default `https://slack.com/api/`).

    Mentions of the app and direct messages start or continue the thread's session
    (`slack:<team>:<channel>:<thread_ts>`); `approvers` are the Slack user ids whose
    Approve / Deny clicks count. `bot_user_id` is the app's bot user (learnt from each
    event's `authorizations` when not given), so its own posts are never fed back.
    Messages to a thread whose turn is running queue behind it (`on_busy`).

    `stream`: show the answer in the thread as the model writes it, with Slack's
    streaming methods, sending buffered text at most every `stream_interval` seconds
    unless `stream_size` characters are waiting. A workspace that refuses those methods
    gets the answer in one post at the end (remembered, so it is not asked again); so do
    hosts that see a turn's events only in batches (AWS). `stream=False` always posts once.
    """
    api = client if client is not None else SlackWebClient(token=bot_token, api_url=api_url)
    ids = [str(a) for a in approvers]
    recipients: dict[str, Recipient] = {}
    events = Events(bot_user_id, recipients)
    replies = Replies(
        api,
        stream=stream,
        stream_interval=stream_interval,
        stream_size=stream_size,
        recipients=recipients,
    )
    interactions = Interactions(api, ids)

    async def on_event(body: Any, ctx: Any) -> Any:
        return await events(body, ctx)

    async def on_interaction(ctx: Any) -> Any:
        return await interactions(ctx)

    return define_channel(
        routes=[
            route("POST", "/events", on_event, description="A Slack Events API request"),
            route(
                "POST",
                "/interactions",
                on_interaction,
                description="A Slack interactivity request (button clicks)",
            ),
        ],
        events=replies.handlers(),
        kind="slack",
        description=description or "Slack threads (Events API and interactivity)",
        auth=SlackSignature(signing_secret, clock),
        on_busy=on_busy,
        host_extras={"slack": api},
    )
