"""`define_channel`: custom HTTP surfaces beyond the built-in session API.

A channel file `agent/channels/<name>.py` serves its routes under `/v1/channels/<name>`:

    class DriveBody(BaseModel):
        pr_url: str

    async def drive(body: DriveBody, ctx: ChannelContext) -> dict:
        accepted = await ctx.receive(f"Review {body.pr_url}", continuation_key=body.pr_url)
        return {"sessionId": accepted.session_id}

    channel = define_channel(
        routes=[route("POST", "/", drive)],
        events={"turn.completed": post_reply},      # delivery, for sessions it owns
    )

Route bodies are validated against the pydantic model (from `body=` or the handler's first
parameter annotation) before the handler runs. `continuation` decides which conversation a
request belongs to: requests that map to the same key follow up one session.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_type_hints

from pydantic import BaseModel

from agentkit.authoring.contexts import HostServices, SessionInfo
from agentkit.authoring.hooks import check_event_handlers

HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
METHODS: tuple[str, ...] = ("GET", "POST", "PUT", "PATCH", "DELETE")
RouteHandler = Callable[..., Any]  # (body, ctx) -> result | Awaitable[result]
ChannelEventHandler = Callable[..., Any]  # (event, ctx) -> None | Awaitable[None]
ContinuationRule = Callable[[Any], str | None]  # validated body -> continuation key
OnBusy = Literal["interrupt", "queue", "reject"]
ON_BUSY: tuple[str, ...] = ("interrupt", "queue", "reject")


@dataclass(frozen=True, slots=True)
class ChannelRequest:
    """The HTTP request a channel's own `auth` sees: raw bytes, before any parsing.

    `loopback` is True only for a direct loopback peer (no proxy-forwarding headers).
    """

    method: str
    path: str
    headers: Mapping[str, str]
    query: Mapping[str, str]
    body: bytes
    loopback: bool = False

    def header(self, name: str) -> str | None:
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), None)


# (request) -> principal id, or None to refuse with 401. May be async.
ChannelAuth = Callable[[ChannelRequest], Any]


class ChannelSessions(Protocol):
    """What a channel may do with the sessions it owns (packs resolve approvals with it)."""

    async def find(self, continuation_key: str) -> str | None:
        """The id of the session bound to `continuation_key`, or None."""
        ...

    async def approvals(self, session_id: str) -> list[Any]: ...

    async def read_events(self, session_id: str) -> list[Any]:
        """The recorded events of a session this channel owns."""
        ...

    async def resolve(self, session_id: str, call_id: str, decision: str) -> None: ...

    async def claim(self, key: str, ttl: float = 7 * 86400) -> bool:
        """True the first time `key` is claimed (durable de-duplication)."""
        ...

    async def release(self, key: str) -> None:
        """Forget the claim on `key`, so a redelivery of what failed is handled again."""
        ...


class ReceiveResult(Protocol):
    """What `ctx.receive` returns: the session the message landed in."""

    @property
    def session_id(self) -> str: ...
    @property
    def turn_id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ChannelContext:
    """What a route handler receives beside its validated body.

    `receive(message, *, continuation_key=None, mode="chat", auth=None)` starts a session
    owned by this channel, or follows up the one already bound to `continuation_key`.
    """

    channel: str
    method: str
    path: str
    headers: Mapping[str, str]
    query: Mapping[str, str]
    principal: str | None
    continuation_key: str | None
    receive: Callable[..., Awaitable[ReceiveResult]]
    host: HostServices
    raw_body: bytes = b""
    sessions: ChannelSessions | None = None

    @property
    def logger(self) -> logging.Logger:
        """The agent's logger: its lines reach `GET /v1/logs` (and CloudWatch when deployed)."""
        return self.host.logger


@dataclass(frozen=True, slots=True)
class ChannelEventContext:
    """What a channel `events` handler receives beside the event: the owning session.

    `live` is True when the handler hears the session's events as they are recorded, in
    the process running the turn (`agentkit serve`), and False when they arrive in batches
    afterwards (the AWS hooks function): only a live handler should stream a reply.
    """

    channel: str
    session: SessionInfo
    host: HostServices
    sessions: ChannelSessions | None = None
    live: bool = False

    def __post_init__(self) -> None:
        # Like a tool's: the handler sees only reminders of the session's own principal.
        object.__setattr__(self, "host", self.host.for_session(self.session))

    @property
    def logger(self) -> logging.Logger:
        """The agent's logger: its lines reach `GET /v1/logs` (and CloudWatch when deployed)."""
        return self.host.logger


@dataclass(frozen=True, slots=True)
class Route:
    """One HTTP route of a channel; `path` is relative to `/v1/channels/<name>`."""

    method: str
    path: str
    handler: RouteHandler
    body: type[BaseModel] | None = None
    description: str | None = None

    def body_schema(self) -> dict[str, Any] | None:
        return self.body.model_json_schema() if self.body is not None else None

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.handler)


def _body_from_signature(fn: Callable[..., Any]) -> type[BaseModel] | None:
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        return None
    try:
        hints = get_type_hints(fn)
    except Exception:  # unresolvable forward refs: no body model
        return None
    hint = hints.get(params[0].name)
    return hint if isinstance(hint, type) and issubclass(hint, BaseModel) else None


def route(
    method: str,
    path: str,
    handler: RouteHandler,
    *,
    body: type[BaseModel] | None = None,
    description: str | None = None,
) -> Route:
    """Declare a route. The body model is `body=` or the handler's first annotation."""
    verb = method.upper()
    if verb not in METHODS:
        raise ValueError(f"route method must be one of {', '.join(METHODS)}, not {method!r}")
    if not callable(handler):
        raise TypeError(f"handler of {verb} {path} is not callable")
    if not path.startswith("/"):
        path = "/" + path
    if ".." in path.split("/") or "//" in path:
        raise ValueError(f"route path {path!r} must be a clean relative path")
    if body is not None and not (isinstance(body, type) and issubclass(body, BaseModel)):
        raise TypeError("route body must be a pydantic model class")
    model = body if body is not None else _body_from_signature(handler)
    return Route(method=verb, path=path, handler=handler, body=model, description=description)


@dataclass(frozen=True, slots=True)
class ChannelDefinition:
    """Routes, delivery handlers and the continuation rule of one channel."""

    routes: tuple[Route, ...]
    events: Mapping[str, ChannelEventHandler] = field(default_factory=dict)
    continuation: ContinuationRule | None = None
    kind: str = "custom"
    description: str | None = None
    host_extras: Mapping[str, Any] = field(default_factory=dict)  # published as `host.<name>`
    auth: ChannelAuth | None = None  # None: the agent's auth chain applies
    on_busy: OnBusy | None = None  # None: the agent's `on_busy` (interrupt by default)

    def find_route(self, method: str, path: str) -> Route | None:
        path = path if path.startswith("/") else "/" + path
        return next((r for r in self.routes if r.method == method.upper() and r.path == path), None)

    def continuation_key(self, body: Any) -> str | None:
        """The conversation a validated body belongs to (None: always a new session)."""
        return self.continuation(body) if self.continuation is not None else None

    def handlers_for(self, event_type: str) -> list[ChannelEventHandler]:
        out = [h for key, h in self.events.items() if key == event_type]
        if "*" in self.events:
            out.append(self.events["*"])
        return out


def define_channel(
    *,
    routes: Sequence[Route | tuple[str, str, RouteHandler]] = (),
    events: Mapping[str, ChannelEventHandler] | None = None,
    continuation: ContinuationRule | None = None,
    kind: str = "custom",
    description: str | None = None,
    auth: ChannelAuth | None = None,
    on_busy: OnBusy | None = None,
    host_extras: Mapping[str, Any] | None = None,
) -> ChannelDefinition:
    """Define a channel. Routes are `route(...)` values or `(method, path, handler)` tuples.

    A channel needs at least one route or one event handler. Two routes may not share a
    method and path. `kind` is `custom` unless a channel pack (slack, github) sets it.
    `auth(request) -> principal id | None` replaces the agent's auth chain for the
    channel's routes (a webhook verifies a signature instead of a bearer token).
    `on_busy` says what a message to a busy session does: `interrupt` its turn, `queue`
    behind it, or `reject` with 409 `session_busy` (default: the agent's choice).
    `host_extras={name: service}` publishes services on `host.<name>` for tools and
    handlers (a pack's API client). Any other keyword is a TypeError, so a typo such as
    `on_bussy=` is reported where it is made instead of being silently kept.
    """
    built: list[Route] = []
    for r in routes:
        built.append(r if isinstance(r, Route) else route(*r))
    seen: set[tuple[str, str]] = set()
    for r in built:
        if (r.method, r.path) in seen:
            raise ValueError(f"channel declares {r.method} {r.path} twice")
        seen.add((r.method, r.path))
    check_event_handlers(
        events or {}, where="define_channel events", handler_label="channel event handler"
    )
    if not built and not events:
        raise ValueError("define_channel needs at least one route or event handler")
    if continuation is not None and not callable(continuation):
        raise TypeError("continuation must be a callable (body) -> key or None")
    if auth is not None and not callable(auth):
        raise TypeError("auth must be a callable (request) -> principal id or None")
    if on_busy is not None and on_busy not in ON_BUSY:
        raise ValueError(f"on_busy must be one of {', '.join(ON_BUSY)}, not {on_busy!r}")
    return ChannelDefinition(
        routes=tuple(built),
        events=dict(events or {}),
        continuation=continuation,
        kind=kind,
        description=description,
        host_extras=dict(host_extras or {}),
        auth=auth,
        on_busy=on_busy,
    )
