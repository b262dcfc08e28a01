"""`define_hook`: observe-only subscribers to the event stream."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentkit.events import EventType

HookHandler = Callable[..., Any]  # (event, ctx) -> None | Awaitable[None]
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class HookDefinition:
    """Handlers keyed by event type, or `"*"` for every event."""

    events: Mapping[str, HookHandler]

    def handlers_for(self, event_type: str) -> list[HookHandler]:
        out = [h for key, h in self.events.items() if key == event_type]
        if WILDCARD in self.events:
            out.append(self.events[WILDCARD])
        return out


def define_hook(*, events: Mapping[str, HookHandler]) -> HookDefinition:
    """Define a hook. Keys are event types from the vocabulary or `"*"`."""
    if not events:
        raise ValueError("define_hook needs at least one event handler")
    known = {t.value for t in EventType} | {WILDCARD}
    for key, handler in events.items():
        if key not in known:
            raise ValueError(f"unknown event type {key!r} in define_hook")
        if not callable(handler):
            raise TypeError(f"hook handler for {key!r} is not callable")
    return HookDefinition(events=dict(events))
