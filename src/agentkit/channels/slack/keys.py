"""Slack thread keys: one chat session per thread, `slack:<team>:<channel>:<thread_ts>`."""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "slack"


@dataclass(frozen=True, slots=True)
class ThreadRef:
    """A Slack thread: the workspace, the conversation and the thread's root `ts`."""

    team: str
    channel: str
    thread_ts: str

    @property
    def key(self) -> str:
        return f"{PREFIX}:{self.team}:{self.channel}:{self.thread_ts}"


def thread_key(team: str, channel: str, thread_ts: str) -> str:
    """The continuation key of a thread."""
    return ThreadRef(team, channel, thread_ts).key


def parse_key(key: str | None) -> ThreadRef | None:
    """The thread a continuation key names, or None for a key that is not a Slack one.
    Slack ids and timestamps never contain `:`, so the split is unambiguous."""
    if not key:
        return None
    parts = key.split(":")
    if len(parts) != 4 or parts[0] != PREFIX or not all(parts[1:]):
        return None
    return ThreadRef(parts[1], parts[2], parts[3])
