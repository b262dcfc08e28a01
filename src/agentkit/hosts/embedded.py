"""`agentkit.serve(...)`: the host `agentkit serve` runs, started inside a Python program.

    async with agentkit.serve("agent", dev=True, port=0) as handle:
        async with handle.client() as client:
            session = await client.start("hello")
        await handle.dispatch_schedule("digest")

It builds the app with the same code as the command (`hosts.serving.build_app`) and runs
uvicorn on the caller's event loop, on a socket bound before startup, so `port=0` gives a
free port whose number is known at once. The handle's schedule and reminder calls go
through each agent's `LocalHost`, the production paths the dev routes use.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from agentkit.client import AsyncClient, Client
from agentkit.hosts.local import LocalHost
from agentkit.hosts.serving import HostConfig, build_app, discover
from agentkit.hosts.signals import stop_signals_to
from agentkit.reminders import ReminderRecord


class ServeHandle:
    """A running embedded server: its `url`, clients, and its schedules and reminders.

    With several agents, calls take `agent=<slug>`; with one, it may be left out.
    """

    def __init__(
        self,
        url: str,
        hosts: list[LocalHost],
        config: HostConfig,
        stop: Callable[[], Awaitable[None]],
        stopped: asyncio.Event,
    ) -> None:
        self.url = url  # the server's root (`http://127.0.0.1:<port>`)
        self.hosts = {h.slug: h for h in hosts}
        self.config = config
        self.stopped = stopped  # set once the server has stopped serving
        self._stop = stop

    def agent_url(self, agent: str | None = None) -> str:
        """The base URL of one agent's API (the root in single mode)."""
        host = self._host(agent)
        return self.url if self.config.mode == "single" else f"{self.url}/{host.slug}"

    def client(self, agent: str | None = None, token: str | None = None) -> AsyncClient:
        """An `AsyncClient` of one agent, with the first bearer token unless told otherwise.

        The server runs on this event loop, so use the async client here (a blocking one
        would stop the loop that has to answer it); `sync_client` is for other threads.
        """
        return AsyncClient(self.agent_url(agent), token or self._default_token())

    def sync_client(self, agent: str | None = None, token: str | None = None) -> Client:
        """A blocking `Client`, for code running on another thread than the server's."""
        return Client(self.agent_url(agent), token or self._default_token())

    async def dispatch_schedule(self, schedule_id: str, *, agent: str | None = None) -> Any:
        """Fire a schedule now, exactly once, through the production path:
        `{scheduleId, sessionIds}`."""
        return await self._host(agent).dispatch_schedule(schedule_id)

    async def create_reminder(
        self,
        *,
        purpose: str,
        channel_id: str,
        continuation_token: str,
        delay: str | None = None,
        every: str | None = None,
        cron: str | None = None,
        at: datetime | str | None = None,
        prompt: str | None = None,
        until: str | None = None,
        run: Any = None,
        session_id: str | None = None,
        agent: str | None = None,
    ) -> ReminderRecord:
        """Create a reminder bound to a conversation (`channel_id` + `continuation_token`):
        exactly one of `delay`, `every`, `cron`, `at`, and one of `prompt` or `run`."""
        return await self._host(agent).reminders.create_reminder(
            purpose=purpose,
            channel_id=channel_id,
            continuation_token=continuation_token,
            delay=delay,
            every=every,
            cron=cron,
            at=at,
            prompt=prompt,
            until=until,
            run=run,
            session_id=session_id,
        )

    async def dispatch_reminder(self, reminder_id: str, *, agent: str | None = None) -> Any:
        """Fire a reminder now, by hand."""
        return await self._host(agent).dispatch_reminder(reminder_id)

    async def close(self) -> None:
        """Stop serving: live streams end, connections close, each host shuts down."""
        await self._stop()

    def _host(self, agent: str | None) -> LocalHost:
        if agent is None:
            if len(self.hosts) != 1:
                raise ValueError(f"several agents are served; name one of {sorted(self.hosts)}")
            return next(iter(self.hosts.values()))
        try:
            return self.hosts[agent]
        except KeyError:
            raise ValueError(f"no agent {agent!r}; served: {sorted(self.hosts)}") from None

    def _default_token(self) -> str | None:
        return self.config.bearer_tokens[0] if self.config.bearer_tokens else None


class Server:
    """`agentkit.serve(...)`: `async with` it for a `ServeHandle`, or `serve_forever()`."""

    def __init__(self, dirs: list[Path], config: HostConfig, host: str, port: int) -> None:
        self.dirs = dirs
        self.config = config
        self.host = host
        self.port = port
        self._handle: ServeHandle | None = None
        self._exit: contextlib.AsyncExitStack | None = None

    async def __aenter__(self) -> ServeHandle:
        stack = contextlib.AsyncExitStack()
        self._handle = await stack.enter_async_context(self._running(quiet_signals=True))
        self._exit = stack
        return self._handle

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._exit is not None:
            await self._exit.aclose()
            self._exit = None

    def serve_forever(self) -> None:
        """Serve until SIGINT/SIGTERM (a script's main loop)."""

        async def main() -> None:
            async with self._running(quiet_signals=False) as handle:
                await handle.stopped.wait()

        asyncio.run(main())

    @contextlib.asynccontextmanager
    async def _running(self, *, quiet_signals: bool) -> AsyncIterator[ServeHandle]:
        import uvicorn

        from agentkit.hosts.connection_limits import ConnectionLimits, guarded_config

        bundles = discover(self.dirs)
        failures: list[BaseException] = []
        app, hosts = build_app(bundles, self.config, startup_errors=failures)
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        port = sock.getsockname()[1]
        state = app.state.agentkit
        stopped = asyncio.Event()

        class _Uvicorn(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:
                state.shutdown.set()  # end live streams first, as `agentkit serve` does
                super().handle_exit(sig, frame)

            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                # uvicorn ends a failed startup with `sys.exit`, which would end the whole
                # program from inside its event loop; here it ends this server only.
                try:
                    await super().startup(sockets)
                except SystemExit:
                    self.should_exit = True

            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                # Embedded, the program's signals are its own. `serve_forever` stops on
                # SIGINT/SIGTERM and returns (uvicorn's own handling would re-raise them).
                if quiet_signals:
                    yield
                    return
                with stop_signals_to(self.handle_exit):
                    yield

        config = guarded_config(
            app,
            self.config.connection_limits or ConnectionLimits(),
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=10,
        )
        server = _Uvicorn(config)
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        task.add_done_callback(lambda _: stopped.set())
        while not server.started:
            if task.done():
                sock.close()
                task.result()
                if failures:
                    raise failures[0]
                raise RuntimeError("the embedded server stopped during startup")
            await asyncio.sleep(0.01)

        async def stop() -> None:
            state.shutdown.set()
            server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await task
            sock.close()

        shown = f"[{self.host}]" if ":" in self.host else self.host
        handle = ServeHandle(f"http://{shown}:{port}", hosts, self.config, stop, stopped)
        try:
            yield handle
        finally:
            await stop()


def serve(
    *dirs: str | Path,
    auth_token: str | list[str] | None = None,
    dev: bool = False,
    state_root: str | Path | None = None,
    port: int = 0,
    host: str = "127.0.0.1",
    mode: Literal["single", "multi"] = "multi",
    allow_anonymous: bool = False,
    playground: bool = True,
    docs: bool = True,
    schedules: bool = True,
    max_body_bytes: int | None = None,
) -> Server:
    """Serve agent folders in-process, as `agentkit serve` does (same options).

    `async with serve("agent", port=0) as handle` yields a `ServeHandle` (`url`,
    `client()`, `dispatch_schedule`, `create_reminder`, `dispatch_reminder`, `close`);
    `serve(...).serve_forever()` blocks until SIGINT/SIGTERM.
    """
    tokens = [auth_token] if isinstance(auth_token, str) else list(auth_token or [])
    config = HostConfig(
        mode=mode,
        dev=dev,
        bearer_tokens=tokens,
        allow_anonymous=allow_anonymous,
        playground=playground,
        docs=docs,
        schedules=schedules,
        state_root=Path(state_root) if state_root is not None else None,
        max_body_bytes=max_body_bytes,
        bound_host=host,
    )
    return Server([Path(d) for d in (dirs or (".",))], config, host, port)
