"""The agent's kill switch: while it is on, no turn takes another step and nothing new starts.

An operator flips it without a deploy. Locally it is a file, `paused`, in the agent's state
folder (`touch .agentkit/paused` turns it on, deleting the file lifts it); on AWS it is an
SSM parameter (`agentkit.aws.pause_switch`). `agentkit pause-all` and `resume-all` flip the
same switch over the API. The engine only sees the `PauseSwitch` protocol.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from agentkit.events import now_iso

SWITCH_FILE = "paused"
# What `Retry-After` tells a caller refused while the switch is on.
RETRY_AFTER = 30
# How long a switch's answer is kept: a turn checks it at every step and tool poll.
SWITCH_CACHE = 1.0


@dataclass(frozen=True, slots=True)
class SwitchState:
    """Whether the switch is on, since when and by whom (when it says)."""

    on: bool
    since: str | None = None
    by: str | None = None


@runtime_checkable
class PauseSwitch(Protocol):
    """Where the agent's kill switch lives."""

    async def read(self) -> SwitchState:
        """The switch now (at most `SWITCH_CACHE` seconds old)."""
        ...

    async def set(self, on: bool, *, by: str) -> SwitchState:
        """Turn the switch on or off; returns the new state."""
        ...


def switched_on(details: str) -> SwitchState:
    """An "on" switch with the details recorded beside it: `{"since", "by"}` as JSON, or
    anything else (empty, damaged), which still brakes but says nothing more."""
    try:
        data = json.loads(details) if details.strip() else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    since, by = data.get("since"), data.get("by")
    return SwitchState(
        True, since if isinstance(since, str) else None, by if isinstance(by, str) else None
    )


class SwitchCache:
    """A switch's last known state, kept `ttl` seconds: a turn checks the switch at every
    step and tool poll, and each switch (file, SSM parameter) is read at most that often."""

    __slots__ = ("_read_at", "state", "ttl")

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self.state = SwitchState(False)
        self._read_at = -1e18

    def fresh(self, now: float) -> SwitchState | None:
        """The kept state while it is younger than `ttl` at `now`, else None."""
        return self.state if now - self._read_at < self.ttl else None

    def keep(self, state: SwitchState, now: float) -> SwitchState:
        """Keep `state` as read at `now`; returns it."""
        self.state, self._read_at = state, now
        return state

    def forget(self) -> None:
        """The next read asks the switch itself (after a write)."""
        self._read_at = -1e18


class FileSwitch:
    """The switch as a file in a state folder: present means on."""

    def __init__(self, root: Path, *, cache: float = SWITCH_CACHE) -> None:
        self.path = root / SWITCH_FILE
        self._cached = SwitchCache(cache)

    async def read(self) -> SwitchState:
        now = time.monotonic()
        kept = self._cached.fresh(now)
        return kept if kept is not None else self._cached.keep(self._load(), now)

    def _load(self) -> SwitchState:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return SwitchState(False)
        except OSError:
            return SwitchState(True)  # a file that exists but cannot be read still brakes
        return switched_on(raw)

    async def set(self, on: bool, *, by: str) -> SwitchState:
        if on:
            current = self._load()
            if not current.on:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                body = json.dumps({"since": now_iso(), "by": by})
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(body, encoding="utf-8")
                tmp.replace(self.path)
        else:
            self.path.unlink(missing_ok=True)
        self._cached.forget()
        return await self.read()


__all__ = [
    "RETRY_AFTER",
    "SWITCH_CACHE",
    "SWITCH_FILE",
    "FileSwitch",
    "PauseSwitch",
    "SwitchCache",
    "SwitchState",
    "switched_on",
]
