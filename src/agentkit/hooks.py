"""Hook fan-out: call the agent's hooks with every recorded event, observe-only.

Two deliveries share one set of rules (matching by event type or `"*"`, a read-only
`HookContext`, every matching handler called even when another fails, each failure logged
on its own and never raised):

- `LocalHookFanout` is the engine's `Fanout` in one process. `publish` only enqueues; a
  background task per (session, hook) drains the queue, so a slow hook delays neither the
  turn, nor the stream, nor the other hooks. Each hook sees a session's events in index
  order, each event once.
- `deliver_to_hooks` is the same delivery awaited in place, for a stream consumer such as
  the AWS hooks function (delivery there is at-least-once; handlers can de-duplicate by
  `(event.session_id, event.index)`).

Every handler call is bounded by its hook's `timeout` (30 s by default). Sync handlers run
in the hooks' own bounded thread pool (`AGENTKIT_HOOK_THREADS`, 8 by default), apart from
the default executor, the tool pool and the store's: a sync call that times out is answered
as a failure and its thread abandoned, still counted by the pool until it returns; when
every thread is held, a sync call fails at once ("hook pool saturated") rather than queue.
So a hung handler costs at most its timeout per event and never blocks later events.

A hook contains everything it raises except cancellation: a `SystemExit` or
`KeyboardInterrupt` from a handler (a stray `sys.exit()`) is logged as that handler's
failure like any exception, so it can stop neither the event loop, nor a stream batch, nor
the other handlers. Only `asyncio.CancelledError` (the fan-out closing) goes through.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentkit.authoring.contexts import HookContext, SessionInfo
from agentkit.authoring.hooks import HookDefinition, HookHandler
from agentkit.engine.tools.calls import session_info
from agentkit.engine.tools.pool import PoolSaturated, ToolPool
from agentkit.events import Event
from agentkit.sessions import SessionRecord

__all__ = [
    "HookFailure",
    "HookTimeout",
    "LocalHookFanout",
    "NamedHook",
    "deliver_to_hooks",
    "hook_pool",
    "load_hooks",
    "session_info",
]

log = logging.getLogger("agentkit.hooks")

SessionLookup = Callable[[str], Awaitable[SessionInfo | None]]


@dataclass(frozen=True, slots=True)
class NamedHook:
    """A hook definition with the name it was discovered under (its file name)."""

    name: str
    definition: HookDefinition


@dataclass(frozen=True, slots=True)
class HookFailure:
    """One handler that raised, for logs and metrics."""

    hook: str
    session_id: str
    index: int
    event_type: str
    error: str


class _HookSource(Protocol):
    """What `load_hooks` needs of an agent bundle."""

    @property
    def manifest(self) -> Any: ...

    def hook(self, name: str) -> Any: ...


def load_hooks(bundle: _HookSource) -> list[NamedHook]:
    """The bundle's hooks, in manifest order. A hook that fails to load is logged and skipped."""
    out: list[NamedHook] = []
    for spec in bundle.manifest.hooks:
        try:
            definition = bundle.hook(spec.name)
        except asyncio.CancelledError:
            raise
        except BaseException:  # a module that exits on import is a broken hook, no more
            log.exception("hook %s could not be loaded; it will not be called", spec.name)
            continue
        if isinstance(definition, HookDefinition):
            out.append(NamedHook(spec.name, definition))
        else:
            log.error("hook %s is not a define_hook(...) definition; skipped", spec.name)
    return out


HOOK_THREADS_ENV = "AGENTKIT_HOOK_THREADS"
DEFAULT_HOOK_THREADS = 8
_POOL: ToolPool | None = None
_POOL_LOCK = threading.Lock()


def hook_pool() -> ToolPool:
    """The process's pool for sync hook handlers (`AGENTKIT_HOOK_THREADS`, 8 by default)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            try:
                size = int(os.environ.get(HOOK_THREADS_ENV, "") or DEFAULT_HOOK_THREADS)
            except ValueError:
                size = DEFAULT_HOOK_THREADS
            _POOL = ToolPool(size, label="hook")
        return _POOL


async def _call(handler: HookHandler, event: Event, ctx: HookContext) -> None:
    if inspect.iscoroutinefunction(handler):
        await handler(event, ctx)
        return
    result = await hook_pool().run(handler, event, ctx)
    if inspect.isawaitable(result):
        await result


class _Escaped(Exception):
    """Carries a `SystemExit`/`KeyboardInterrupt` out of the `wait_for` task: raised as
    itself there, asyncio would hand it to the event loop instead of to us."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


async def _contained(handler: HookHandler, event: Event, ctx: HookContext) -> None:
    try:
        await _call(handler, event, ctx)
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as exc:
        raise _Escaped(exc) from exc


async def _bounded_call(
    handler: HookHandler, event: Event, ctx: HookContext, timeout: float
) -> None:
    """`_call` within `timeout` seconds; a sync handler past it keeps its (counted) thread."""
    try:
        await asyncio.wait_for(_contained(handler, event, ctx), timeout)
    except TimeoutError:
        raise HookTimeout(f"hook handler timed out after {timeout:g}s") from None
    except _Escaped as escaped:
        raise escaped.original from None


class HookTimeout(Exception):
    """A handler call took longer than its hook's timeout and was abandoned."""


def _handler_name(handler: HookHandler) -> str:
    return str(getattr(handler, "__qualname__", None) or getattr(handler, "__name__", handler))


async def _deliver_one(hook: NamedHook, event: Event, ctx: HookContext) -> list[HookFailure]:
    """Call every handler of `hook` that matches `event`; one failing never skips the next."""
    failures: list[HookFailure] = []
    for handler in hook.definition.handlers_for(event.type):
        try:
            await _bounded_call(handler, event, ctx, hook.definition.timeout)
        except asyncio.CancelledError:
            raise
        except (HookTimeout, PoolSaturated) as exc:  # expected shapes: no traceback noise
            log.error(
                "hook %s handler %s failed on %s #%d of session %s: %s",
                hook.name,
                _handler_name(handler),
                event.type,
                event.index,
                event.session_id,
                exc,
            )
            failures.append(
                HookFailure(hook.name, event.session_id, event.index, event.type, str(exc))
            )
        except BaseException as exc:  # hooks are observe-only: nothing they raise is fatal
            log.error(
                "hook %s handler %s failed on %s #%d of session %s",
                hook.name,
                _handler_name(handler),
                event.type,
                event.index,
                event.session_id,
                exc_info=exc,
            )
            failures.append(
                HookFailure(hook.name, event.session_id, event.index, event.type, repr(exc))
            )
    return failures


async def deliver_to_hooks(
    hooks: Sequence[NamedHook] | _HookSource,
    events: Iterable[Event],
    *,
    sessions: SessionLookup | Mapping[str, SessionInfo] | None = None,
) -> list[HookFailure]:
    """Deliver `events` to every matching hook handler, awaited, in the order given.

    `sessions` tells a hook about the session an event belongs to (a lookup coroutine or a
    mapping); when it knows nothing, the hook gets a `SessionInfo` with only the id and an
    unknown channel. Never raises for a handler's error: returns the failures instead.
    """
    named = list(hooks) if isinstance(hooks, Sequence) else load_hooks(hooks)
    failures: list[HookFailure] = []
    cache: dict[str, SessionInfo] = {}
    for event in events:
        matching = [h for h in named if h.definition.handlers_for(event.type)]
        if not matching:
            continue
        info = cache.get(event.session_id)
        if info is None:
            info = await _lookup(sessions, event.session_id)
            cache[event.session_id] = info
        ctx = HookContext(session=info)
        for hook in matching:
            failures.extend(await _deliver_one(hook, event, ctx))
    return failures


async def _lookup(
    sessions: SessionLookup | Mapping[str, SessionInfo] | None, session_id: str
) -> SessionInfo:
    found: SessionInfo | None = None
    try:
        if isinstance(sessions, Mapping):
            found = sessions.get(session_id)
        elif sessions is not None:
            found = await sessions(session_id)
    except Exception:
        log.exception("could not look up session %s for hooks", session_id)
    return found or SessionInfo(id=session_id, channel_id="unknown")


@dataclass(slots=True)
class _Lane:
    """Undelivered events of one session for one hook, and how far delivery got."""

    pending: list[Event] = field(default_factory=list)
    delivered: int = -1
    info: SessionInfo | None = None
    task: asyncio.Task[None] | None = None


class LocalHookFanout:
    """The engine's `Fanout` for one process: queue per (session, hook), drained in the
    background. `publish` never blocks, never raises, never touches the events."""

    def __init__(self, hooks: Sequence[NamedHook]) -> None:
        self._hooks = list(hooks)
        self._lanes: dict[tuple[str, str], _Lane] = {}
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False

    @classmethod
    def from_bundle(cls, bundle: _HookSource) -> LocalHookFanout:
        return cls(load_hooks(bundle))

    @property
    def hooks(self) -> list[NamedHook]:
        return list(self._hooks)

    def replace_hooks(self, hooks: Sequence[NamedHook]) -> None:
        """Deliver later events to `hooks` (a reloaded agent); queued ones still drain."""
        self._hooks = list(hooks)

    def publish(self, session: SessionRecord, events: list[Event]) -> None:
        if self._closed or not self._hooks or not events:
            return
        try:
            self._enqueue(session, events)
        except Exception:  # never into the turn
            log.exception("hook fan-out could not enqueue events of %s", session.id)

    def _enqueue(self, session: SessionRecord, events: list[Event]) -> None:
        info = session_info(session)
        for hook in self._hooks:
            wanted = [e for e in events if hook.definition.handlers_for(e.type)]
            if not wanted:
                continue
            lane = self._lanes.setdefault((session.id, hook.name), _Lane())
            lane.info = info
            lane.pending.extend(wanted)
            if lane.task is None:
                self._idle.clear()
                lane.task = asyncio.get_running_loop().create_task(
                    self._drain(session.id, hook), name=f"hook:{hook.name}:{session.id}"
                )

    async def _drain(self, session_id: str, hook: NamedHook) -> None:
        key = (session_id, hook.name)
        lane = self._lanes[key]
        try:
            # `_closed` is checked before each event, not left to cancellation alone: a
            # handler that finishes in the step the fan-out closes can swallow the cancel
            # (`asyncio.wait_for` before 3.12 then returns its result), and the queue must
            # not be drained after close all the same.
            while lane.pending and not self._closed:
                # Publishes of one session may interleave; deliver the lowest index first
                # and never one at or below what this hook already saw.
                lane.pending.sort(key=lambda e: e.index)
                event = lane.pending.pop(0)
                if event.index <= lane.delivered:
                    continue
                lane.delivered = event.index
                assert lane.info is not None
                await _deliver_one(hook, event, HookContext(session=lane.info))
        finally:
            lane.task = None
            if not lane.pending:
                del self._lanes[key]
            if not any(la.task for la in self._lanes.values()):
                self._idle.set()

    async def drain(self) -> None:
        """Wait until every queued event has been handed to its hooks (tests, shutdown)."""
        while any(la.task for la in self._lanes.values()):
            await self._idle.wait()

    async def close(self) -> None:
        """Stop delivering: cancel running handlers and drop what is queued."""
        self._closed = True
        for lane in self._lanes.values():
            lane.pending.clear()
        tasks = [la.task for la in self._lanes.values() if la.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._lanes.clear()
        self._idle.set()
