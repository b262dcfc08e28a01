"""The channel runtime of one agent: `receive`, continuation keys, and route handling.

A channel's sessions are on channel `<id>`, and a continuation key names one conversation
within the channel. They are owned by the caller a route admitted through the agent's auth
chain (a bearer token's principal, say), who is also the one charged for them, or else by
the channel's own principal `channel:<id>` (a webhook pack's signed deliveries, schedules).
The runtime is framework-free: the server turns an HTTP request into a `ChannelRequest`
and answers with the `ChannelReply` this module gives back, so the same code serves
`agentkit serve` and Lambda. Packs (GitHub, Slack) are channels like any other; nothing
here knows them.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from agentkit.authoring.channels import (
    ChannelContext,
    ChannelDefinition,
    ChannelRequest,
    OnBusy,
    Route,
)
from agentkit.authoring.contexts import HostServices
from agentkit.engine.keyed_sends import KeyedSends
from agentkit.engine.on_busy import agent_on_busy
from agentkit.engine.service import Accepted, AgentService
from agentkit.errors import BadRequest, NotFound, Unauthorized
from agentkit.sessions import Mode, Principal

log = logging.getLogger("agentkit.channels")
MAX_KEY_CHARS = 512


class ClaimStore(Protocol):
    """The part of the Store channels use: durable first-seen claims and key lookups."""

    async def claim(self, key: str, ttl: float) -> bool: ...

    async def release_claim(self, key: str) -> None: ...

    async def find_session(self, channel_id: str, continuation_key: str) -> Any: ...


class ChannelSource(Protocol):
    """What the runtime needs of an agent bundle."""

    @property
    def manifest(self) -> Any: ...

    def channel(self, name: str) -> ChannelDefinition | None: ...


@dataclass(frozen=True, slots=True)
class ChannelReply:
    """What a channel route answers: a status and a JSON body."""

    status: int
    body: Any


def channel_principal(channel_id: str) -> Principal:
    """The channel's own principal: the owner of the sessions no admitted caller started."""
    return Principal(f"channel:{channel_id}")


def route_owner(definition: ChannelDefinition, channel_id: str, admitted: str | None) -> Principal:
    """Who owns, and pays for, what a route request starts: the caller the agent's auth
    chain admitted, when the channel has no auth of its own; else the channel itself (what
    a channel's own `auth` returns names a signer, not a caller of this API)."""
    if definition.auth is None and admitted and not admitted.startswith("channel:"):
        return Principal(admitted)
    return channel_principal(channel_id)


@dataclass(slots=True)
class ChannelSessionsView:
    """`ChannelSessions` for one channel: only the sessions that channel owns."""

    runtime: ChannelRuntime
    channel_id: str

    async def find(self, continuation_key: str) -> str | None:
        record = await self.runtime.store.find_session(self.channel_id, continuation_key)
        return record.id if record is not None else None

    async def _owner(self, session_id: str) -> Principal:
        """The owner of `session_id` when it is one of this channel's sessions (whoever
        started it: the channel or a caller of its routes); `NotFound` otherwise."""
        service = self.runtime.service
        record = await service.get_session(session_id, principal=Principal("channel", admin=True))
        if record.channel_id != self.channel_id:
            raise NotFound(f"no session {session_id[:80]!r} on channel {self.channel_id}")
        return Principal(record.principal or channel_principal(self.channel_id).id)

    async def approvals(self, session_id: str) -> list[Any]:
        owner = await self._owner(session_id)
        return await self.runtime.service.approvals(session_id, principal=owner)

    async def read_events(self, session_id: str) -> list[Any]:
        owner = await self._owner(session_id)
        return list(await self.runtime.service.read_events(session_id, principal=owner))

    async def resolve(self, session_id: str, call_id: str, decision: str) -> None:
        if decision not in ("approve", "deny"):
            raise ValueError("decision must be approve or deny")
        await self.runtime.service.resolve_approval(
            session_id,
            call_id,
            "approve" if decision == "approve" else "deny",
            principal=await self._owner(session_id),
        )

    async def claim(self, key: str, ttl: float = 7 * 86400) -> bool:
        return await self.runtime.store.claim(f"channel:{self.channel_id}:{key}", ttl)

    async def release(self, key: str) -> None:
        await self.runtime.store.release_claim(f"channel:{self.channel_id}:{key}")


@dataclass(slots=True)
class ChannelRuntime:
    """Channels of one agent over its `AgentService`; `deployed` hosts refuse insecure packs."""

    service: AgentService
    source: ChannelSource
    store: ClaimStore
    host: HostServices = field(default_factory=HostServices)
    deployed: bool = False
    _loaded: dict[str, ChannelDefinition] | None = None
    _sends: KeyedSends = field(init=False)

    def __post_init__(self) -> None:
        self._sends = KeyedSends(self.service)

    # ---- the channels ----------------------------------------------------------------

    @property
    def channels(self) -> dict[str, ChannelDefinition]:
        """Channel id -> definition; a channel that fails to load is logged and left out."""
        if self._loaded is None:
            loaded: dict[str, ChannelDefinition] = {}
            for spec in self.source.manifest.channels:
                try:
                    definition = self.source.channel(spec.name)
                except Exception:
                    log.exception("channel %s could not be loaded; it is not served", spec.name)
                    continue
                if definition is not None:
                    loaded[spec.name] = definition
                    # A pack offers services to tools and handlers (`host.github`).
                    for name, service in definition.host_extras.items():
                        self.host.extras.setdefault(str(name), service)
            self._loaded = loaded
        return self._loaded

    def channel_id(self, channel: Any) -> str:
        """The id of `channel`: an id, or the definition object imported from its file."""
        if isinstance(channel, str):
            if channel not in self.channels:
                raise NotFound(f"unknown channel {channel[:80]!r}", code="channel_not_found")
            return channel
        for name, definition in self.channels.items():
            if definition is channel or definition == channel:
                return name
        raise ValueError(f"{channel!r} is not a channel of this agent")

    def sessions(self, channel_id: str) -> ChannelSessionsView:
        return ChannelSessionsView(self, channel_id)

    # ---- receive ---------------------------------------------------------------------

    async def receive(
        self,
        channel: Any,
        message: str,
        *,
        continuation_key: str | None = None,
        mode: Mode = "chat",
        on_busy: OnBusy | None = None,
        source: str | None = None,
        owner: Principal | None = None,
    ) -> Accepted:
        """Hand `message` to a channel's conversation `continuation_key`.

        A key not seen before starts a session owned by `owner` (default: the channel's
        own `channel:<id>`); a bound key continues its session (a busy one per the
        channel's `on_busy`) for its owner only. `mode="task"` always starts a task
        session. No key: always a new session.
        """
        channel_id = self.channel_id(channel)
        if not isinstance(message, str) or not message.strip():
            raise BadRequest("receive needs a non-empty message")
        if continuation_key is not None and (
            not isinstance(continuation_key, str)
            or not continuation_key
            or len(continuation_key) > MAX_KEY_CHARS
        ):
            raise BadRequest(f"a continuation key is 1 to {MAX_KEY_CHARS} characters")
        # The channel itself (a schedule handing work to it, a signed delivery) continues
        # any session of its own channel; a caller only the sessions they own.
        acting = owner or Principal(channel_principal(channel_id).id, admin=True)
        owner = owner or channel_principal(channel_id)
        busy = on_busy or self.channels[channel_id].on_busy or agent_on_busy(self.service.manifest)
        origin = source or channel_id
        if mode == "task" or continuation_key is None:
            return await self._start(channel_id, message, owner, mode, continuation_key, origin)
        sent = await self._sends.send(
            channel_id,
            continuation_key,
            message,
            acting=acting,
            owner=owner,
            source=origin,
            on_busy=busy,
        )
        # The channel's key is the session's continuation token (spec: channels decide).
        return Accepted(sent.accepted.session_id, continuation_key, sent.accepted.turn_id)

    async def _start(
        self,
        channel_id: str,
        message: str,
        owner: Principal,
        mode: Mode,
        key: str | None,
        source: str,
    ) -> Accepted:
        accepted = await self.service.start_session(
            message,
            principal=owner,
            channel_id=channel_id,
            mode=mode,
            continuation_key=key,
            source=source,
        )
        if key is None:
            return accepted
        # The channel's key is the session's continuation token (spec: channels decide).
        return Accepted(accepted.session_id, key, accepted.turn_id)

    # ---- HTTP ------------------------------------------------------------------------

    async def authenticate(
        self, channel_id: str, request: ChannelRequest, fallback: Any
    ) -> str | None:
        """The caller's principal id: the channel's own `auth`, else `fallback()` (the
        agent's chain). Raises `Unauthorized` when refused."""
        definition = self.channels[channel_id]
        if definition.auth is None:
            principal = fallback()
            return principal.id if isinstance(principal, Principal) else None
        check = getattr(definition.auth, "check_deployable", None)
        if self.deployed and callable(check):
            check()  # raises: a deployed pack without its secret does not run
        admitted = definition.auth(request)
        if inspect.isawaitable(admitted):
            admitted = await admitted
        if not admitted:
            raise Unauthorized("the request is not signed for this channel")
        return str(admitted)

    async def handle(
        self,
        channel_id: str,
        route: Route,
        request: ChannelRequest,
        principal: str | None,
    ) -> ChannelReply:
        """Validate the body against the route's model, call the handler, shape the reply."""
        body = parse_body(route, request.body)
        definition = self.channels[channel_id]
        key = definition.continuation_key(body) if body is not None else None
        owner = route_owner(definition, channel_id, principal)

        async def receive(
            message: str,
            *,
            continuation_key: str | None = key,
            mode: Mode = "chat",
            on_busy: OnBusy | None = None,
            **_: Any,
        ) -> Accepted:
            return await self.receive(
                channel_id,
                message,
                continuation_key=continuation_key,
                mode=mode,
                on_busy=on_busy,
                owner=owner,
            )

        ctx = ChannelContext(
            channel=channel_id,
            method=request.method,
            path=request.path,
            headers=request.headers,
            query=request.query,
            principal=principal,
            continuation_key=key,
            receive=receive,
            # Reminders narrowed to the owner of what this request starts: a webhook's
            # payload or one caller must not reach other principals' reminders.
            host=self.host.for_principal(owner.id),
            raw_body=request.body,
            sessions=self.sessions(channel_id),
        )
        result = await call_handler(route, body, ctx)
        return await self.reply(channel_id, result, owner)

    async def reply(
        self, channel_id: str, result: Any, owner: Principal | None = None
    ) -> ChannelReply:
        """`{"task": ...}` starts a task session (202); a `ChannelReply` is kept as is."""
        if isinstance(result, ChannelReply):
            return result
        if isinstance(result, Mapping) and set(result) == {"task"}:
            task = result["task"]
            if not isinstance(task, str) or not task.strip():
                raise BadRequest("a {task} reply needs a non-empty task message")
            accepted = await self.receive(channel_id, task, mode="task", owner=owner)
            return ChannelReply(202, {"ok": True, "sessionId": accepted.session_id})
        if isinstance(result, BaseModel):
            return ChannelReply(200, result.model_dump(mode="json", by_alias=True))
        if isinstance(result, Accepted):
            return ChannelReply(
                200, {"ok": True, "sessionId": result.session_id, "turnId": result.turn_id}
            )
        return ChannelReply(200, {"ok": True} if result is None else result)


def parse_body(route: Route, raw: bytes) -> Any:
    """The route's validated body (`BadRequest` with the validation message when not)."""
    if route.body is None:
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None  # a route without a model takes what it gets (raw_body)
    try:
        return route.body.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        detail = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        raise BadRequest(f"invalid body: {detail}") from None


async def call_handler(route: Route, body: Any, ctx: ChannelContext) -> Any:
    """Call a sync or async handler with `(body, ctx)` (or `(ctx)` for no-body routes)."""
    params = len(inspect.signature(route.handler).parameters)
    args: tuple[Any, ...] = (body, ctx) if params >= 2 else (ctx,) if params == 1 else ()
    if route.is_async:
        return await route.handler(*args)
    result = await asyncio.to_thread(route.handler, *args)
    if inspect.isawaitable(result):
        result = await result
    return result


__all__ = [
    "ChannelReply",
    "ChannelRuntime",
    "ChannelSessionsView",
    "call_handler",
    "channel_principal",
    "parse_body",
    "route_owner",
]
