"""Conversation keys and messages of the GitHub channel: one session per pull request."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentkit.events import Event, EventType

KEY_RE = re.compile(r"^pr:(?P<owner>[^/\s]+)/(?P<repo>[^#\s]+)#(?P<number>\d+)$")
HEAD_RE = re.compile(r"^Head SHA: (?P<sha>[0-9a-fA-F]{7,64})$", re.MULTILINE)
MARKER = "<!-- agentkit:github -->"  # in every comment the channel posts


@dataclass(frozen=True, slots=True)
class PullRef:
    owner: str
    repo: str
    number: int

    @property
    def key(self) -> str:
        return f"pr:{self.owner}/{self.repo}#{self.number}"


def parse_key(key: str | None) -> PullRef | None:
    match = KEY_RE.match(key or "")
    if match is None:
        return None
    return PullRef(match["owner"], match["repo"], int(match["number"]))


def pull_ref(payload: dict[str, Any], number: Any) -> PullRef | None:
    """The PR a payload is about (`repository.full_name` plus the PR/issue number)."""
    full = str((payload.get("repository") or {}).get("full_name") or "")
    owner, _, repo = full.partition("/")
    if not owner or not repo or not isinstance(number, int):
        return None
    return PullRef(owner, repo, number)


def pr_message(action: str, pr: dict[str, Any], ref: PullRef) -> str:
    head = str((pr.get("head") or {}).get("sha") or "")
    lines = [
        f"Pull request {ref.owner}/{ref.repo}#{ref.number} was {action.replace('_', ' ')}.",
        f"Title: {pr.get('title') or ''}",
        f"URL: {pr.get('html_url') or ''}",
        f"Head SHA: {head}",
        f"Action: {action}",
    ]
    body = str(pr.get("body") or "").strip()
    if body:
        lines += ["", body]
    return "\n".join(lines)


def comment_message(comment: dict[str, Any]) -> str:
    login = str((comment.get("user") or {}).get("login") or "someone")
    return f"Comment from @{login}:\n{comment.get('body') or ''}"


def head_sha_in(text: str) -> str | None:
    """The head SHA of a PR message of this channel (`pr_message`), read from its fixed
    header line only: comment messages, and the PR body below the header, are text that
    outsiders write, so a `Head SHA:` line in them never counts."""
    lines = (text or "").split("\n")
    if not lines[0].startswith("Pull request ") or len(lines) < 4:
        return None
    found = HEAD_RE.fullmatch(lines[3])
    return found["sha"] if found else None


def approval_asked(events: Iterable[Event], call_id: str) -> tuple[Event | None, str | None]:
    """The `action.approval_requested` event of `call_id` (None if there is none) and the
    head SHA the session had seen when it was asked: the last PR message before it."""
    head: str | None = None
    for event in events:
        if event.type == EventType.MESSAGE_RECEIVED:
            head = head_sha_in(str(event.data.get("message", ""))) or head
        elif (
            event.type == EventType.ACTION_APPROVAL_REQUESTED
            and event.data.get("callId") == call_id
        ):
            return event, head
    return None, head
