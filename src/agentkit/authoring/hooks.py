"""`define_hook`: observe-only subscribers to the event stream."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentkit.events import EventType

HookHandler = Callable[..., Any]  # (event, ctx) -> None | Awaitable[None]
WILDCARD = "*"
DEFAULT_TIMEOUT = 30.0  # seconds one handler call may take before it counts as failed


@dataclass(frozen=True, slots=True)
class HookDefinition:
    """Handlers keyed by event type, or `"*"` for every event; `timeout` bounds each call."""

    events: Mapping[str, HookHandler]
    timeout: float = DEFAULT_TIMEOUT

    def handlers_for(self, event_type: str) -> list[HookHandler]:
        out = [h for key, h in self.events.items() if key == event_type]
        if WILDCARD in self.events:
            out.append(self.events[WILDCARD])
        return out


def check_event_handlers(events: Mapping[str, Any], *, where: str, handler_label: str) -> None:
    """Raise unless every key is an event type (or `"*"`) and every value is callable.

    `where` and `handler_label` name the caller in the messages ("define_hook", "hook
    handler"), so hooks and channel event handlers read alike.
    """
    known = {t.value for t in EventType} | {WILDCARD}
    for key, handler in events.items():
        if key not in known:
            raise ValueError(f"unknown event type {key!r} in {where}")
        if not callable(handler):
            raise TypeError(f"{handler_label} for {key!r} is not callable")


def define_hook(
    *, events: Mapping[str, HookHandler], timeout: float = DEFAULT_TIMEOUT
) -> HookDefinition:
    """Define a hook. Keys are event types from the vocabulary or `"*"`.

    `timeout` (seconds, 30 by default) bounds each handler call; a call that takes longer
    is logged as that handler's failure and the next event goes on without it.
    """
    if not events:
        raise ValueError("define_hook needs at least one event handler")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError("define_hook timeout must be a positive number of seconds")
    check_event_handlers(events, where="define_hook", handler_label="hook handler")
    return HookDefinition(events=dict(events), timeout=float(timeout))
