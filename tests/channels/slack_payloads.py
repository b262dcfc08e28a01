"""Slack requests shaped and signed as Slack sends them (Events API and interactivity)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from typing import Any
from urllib.parse import urlencode

TEAM = "T0HELPDESK"
CHANNEL = "C0SUPPORT"
BOT = "U0AGENTBOT"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """`v0=` + HMAC-SHA256 over `v0:<timestamp>:<body>`, computed here by hand."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def headers_for(
    body: bytes, secret: str | None, *, timestamp: int | None = None, content_type: str
) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    headers = {
        "Content-Type": content_type,
        "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
        "X-Slack-Request-Timestamp": ts,
    }
    if secret is not None:
        headers["X-Slack-Signature"] = sign(secret, ts, body)
    return headers


def event_request(
    payload: dict[str, Any], secret: str | None, *, timestamp: int | None = None, retry: int = 0
) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(payload, separators=(",", ":")).encode()
    headers = headers_for(body, secret, timestamp=timestamp, content_type="application/json")
    if retry:
        headers["X-Slack-Retry-Num"] = str(retry)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    return body, headers


def interaction_request(
    payload: dict[str, Any], secret: str | None, *, timestamp: int | None = None
) -> tuple[bytes, dict[str, str]]:
    body = urlencode({"payload": json.dumps(payload, separators=(",", ":"))}).encode()
    return body, headers_for(
        body, secret, timestamp=timestamp, content_type="application/x-www-form-urlencoded"
    )


def url_verification(challenge: str) -> dict[str, Any]:
    return {"token": "legacy", "challenge": challenge, "type": "url_verification"}


def envelope(event: dict[str, Any], event_id: str | None = None) -> dict[str, Any]:
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM,
        "api_app_id": "A0HELPDESK",
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": int(time.time()),
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": TEAM,
                "user_id": BOT,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": "4-eyJldCI6ImFwcF9tZW50aW9uIn0",
    }


def mention(
    text: str, ts: str, *, user: str = "U0ALICE", thread_ts: str | None = None, **extra: Any
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "client_msg_id": str(uuid.uuid4()),
        "type": "app_mention",
        "text": f"<@{BOT}> {text}",
        "user": user,
        "ts": ts,
        "team": TEAM,
        "channel": CHANNEL,
        "event_ts": ts,
        **extra,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def direct_message(text: str, ts: str, *, channel: str = "D0ALICE", **extra: Any) -> dict:
    return {
        "client_msg_id": str(uuid.uuid4()),
        "type": "message",
        "text": text,
        "user": "U0ALICE",
        "ts": ts,
        "team": TEAM,
        "channel": channel,
        "event_ts": ts,
        "channel_type": "im",
        **extra,
    }


def block_action(
    action_id: str, value: str, *, user: str, message_ts: str, thread_ts: str
) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": TEAM},
        "api_app_id": "A0HELPDESK",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": CHANNEL,
            "is_ephemeral": False,
            "thread_ts": thread_ts,
        },
        "trigger_id": "1234.5678.abcdef",
        "team": {"id": TEAM, "domain": "helpdesk"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": CHANNEL, "name": "support"},
        "message": {"type": "message", "ts": message_ts, "thread_ts": thread_ts, "bot_id": "B0"},
        "response_url": "https://hooks.slack.invalid/actions/T0/1/xyz",
        "actions": [
            {
                "action_id": action_id,
                "block_id": "approval",
                "text": {"type": "plain_text", "text": "Approve"},
                "value": value,
                "type": "button",
                "action_ts": str(time.time()),
            }
        ],
    }
