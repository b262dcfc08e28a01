"""MCP connections: tools of external MCP servers, for the model and for `host.mcp`.

Each `agent/mcp-connections/<name>.py` is opened on first use (a turn listing tools, or a
`host.mcp` call) with the official SDK's client (`mcp.Client`: streamable HTTP with the
connection's headers, or a stdio child process with its env), then reused for the life of
the process. Its tool list is fetched once and cached, and fetched again after a reconnect.

The engine never sees MCP: `McpConnections.tool_entries()` hands it plain `ToolEntry`s
(`mcp__<connection>__<tool>`, see `mcp.naming`) whose handler calls the server. A call has
the connection's timeout; a failing or unreachable server becomes an error result; a
dropped connection is closed and reopened by the next call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentkit.authoring.contexts import ToolContext
from agentkit.authoring.mcp import McpConnectionDefinition
from agentkit.engine.tools.calls import ToolEntry
from agentkit.engine.trace_context import outgoing
from agentkit.errors import ToolError
from agentkit.mcp.naming import assign_names
from agentkit.project.manifest import Manifest
from agentkit.project.mcp_lock import McpLock, tool_hash

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, Tool

log = logging.getLogger("agentkit.mcp")
# Opening a connection (starting a stdio server, the handshake) and listing its tools may
# take longer than one call is allowed: a cold Python server alone can take seconds.
MIN_OPEN_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class McpTool:
    """One tool as a connection lists it (after the connection's `tools=` filter)."""

    connection: str
    name: str
    description: str
    input_schema: dict[str, Any]

    @property
    def digest(self) -> str:
        return tool_hash(self.description, self.input_schema)

    def wire(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        }


def _message(exc: BaseException) -> str:
    """The innermost useful message of an error (task groups wrap them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not text.startswith(type(exc).__name__) else text


class Connection:
    """One MCP server: an SDK client held open by a task of its own.

    The SDK client is an async context whose task groups must be entered and left by one
    task, while calls come from many (turns, tools, handlers): a holder task enters it and
    waits; `close()` asks that task to leave.
    """

    def __init__(
        self,
        name: str,
        definition: McpConnectionDefinition,
        *,
        cwd: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.definition = definition
        self.cwd = cwd
        self.environ = environ
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tools: list[McpTool] | None = None
        self._guard: asyncio.Lock | None = None
        self._http_status: int | None = None

    def _explain(self, exc: BaseException) -> str:
        status, self._http_status = self._http_status, None
        text = _message(exc)
        return f"{text} (HTTP {status})" if status is not None else text

    @property
    def connected(self) -> bool:
        return (
            self._client is not None
            and self._holder is not None
            and not self._holder.done()
            and self._loop is asyncio.get_running_loop()
        )

    @property
    def open_timeout(self) -> float:
        return max(self.definition.timeout, MIN_OPEN_TIMEOUT)

    @property
    def cached_tools(self) -> list[McpTool] | None:
        return self._tools

    def _make_client(self) -> Client:
        from mcp import Client, StdioServerParameters

        d = self.definition
        if d.transport == "stdio":
            assert d.command is not None
            env = {**os.environ, **d.resolved_env(self.environ)}
            params = StdioServerParameters(
                command=d.command[0], args=list(d.command[1:]), env=env, cwd=self.cwd
            )
            return Client(params, cache=None)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert d.url is not None

        async def note_status(response: httpx2.Response) -> None:
            # The SDK reports a refused request as a bare "error response"; keep the status
            # so the error result can say "HTTP 401" (a wrong token) or "HTTP 503".
            if response.status_code >= 400:
                self._http_status = response.status_code

        async def trace_out(request: httpx2.Request) -> None:
            # The SDK sends each message in its caller's context: the call's trace, if any.
            request.headers.update(outgoing())

        http = httpx2.AsyncClient(
            headers=d.resolved_headers(self.environ),
            timeout=httpx2.Timeout(d.timeout),
            event_hooks={"request": [trace_out], "response": [note_status]},
        )
        return Client(streamable_http_client(d.url, http_client=http), cache=None)

    async def client(self) -> Client:
        """The open client, opening (or reopening) it first when needed."""
        loop = asyncio.get_running_loop()
        if self._guard is None or self._loop is not loop:
            self._guard = asyncio.Lock()
        async with self._guard:
            if self.connected:
                assert self._client is not None
                return self._client
            await self._forget()
            return await self._open(loop)

    async def _open(self, loop: asyncio.AbstractEventLoop) -> Client:
        ready: asyncio.Future[Client] = loop.create_future()
        stop = asyncio.Event()
        client = self._make_client()

        async def hold() -> None:
            try:
                async with client as entered:
                    ready.set_result(entered)
                    await stop.wait()
            except Exception as exc:  # the server went away, or never came
                if not ready.done():
                    ready.set_exception(ToolError(self._explain(exc)))
                else:
                    log.info("MCP connection %s closed: %s", self.name, _message(exc))

        holder = loop.create_task(hold(), name=f"mcp:{self.name}")
        try:
            opened = await asyncio.wait_for(asyncio.shield(ready), self.open_timeout)
        except TimeoutError:
            holder.cancel()
            raise ToolError(f"could not connect within {self.open_timeout:g}s") from None
        except ToolError:
            await asyncio.gather(holder, return_exceptions=True)
            raise
        self._client, self._holder, self._stop, self._loop = opened, holder, stop, loop
        self._tools = None  # listed again after every (re)connect
        return opened

    async def _forget(self) -> None:
        holder, stop = self._holder, self._stop
        self._client = self._holder = self._stop = None
        self._tools = None
        if holder is None or stop is None or holder.done():
            return
        if holder.get_loop() is not asyncio.get_running_loop():
            return  # that loop is gone (a new Lambda invocation loop): nothing to await
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(holder), 5.0)
        except (TimeoutError, Exception):
            holder.cancel()

    async def close(self) -> None:
        await self._forget()

    async def list_tools(self) -> list[McpTool]:
        """The server's tools (cached until the connection is reopened)."""
        if self._tools is not None and self.connected:
            return self._tools
        client = await self.client()
        try:
            listed = await asyncio.wait_for(client.list_tools(), self.open_timeout)
        except Exception as exc:
            await self._forget()
            raise ToolError(self._explain(exc)) from None
        wanted = self.definition.tools
        self._tools = [
            _tool(self.name, t) for t in listed.tools if wanted is None or t.name in wanted
        ]
        return self._tools

    async def call_tool(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """Call one tool; the server's error results raise `ToolError`."""
        client = await self.client()
        self._http_status = None
        try:
            result = await asyncio.wait_for(
                client.call_tool(tool, dict(arguments)), self.definition.timeout
            )
        except TimeoutError:
            raise ToolError(f"timed out after {self.definition.timeout:g}s") from None
        except Exception as exc:
            await self._forget()  # the next call reconnects
            raise ToolError(
                f"{self._explain(exc)}; the connection reopens on the next call"
            ) from None
        return _value(result)


def _tool(connection: str, tool: Tool) -> McpTool:
    schema = dict(tool.input_schema or {"type": "object"})
    return McpTool(connection, tool.name, tool.description or "", schema)


def _value(result: CallToolResult) -> Any:
    texts = [getattr(c, "text", None) for c in result.content]
    text = "\n".join(t for t in texts if isinstance(t, str))
    if result.is_error:
        raise ToolError(text or "the MCP server reported an error")
    if result.structured_content is not None:
        return result.structured_content
    if all(isinstance(t, str) for t in texts):
        return text
    return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content]


class McpConnections:
    """Every MCP connection of one agent: `host.mcp` and the engine's tool provider."""

    def __init__(
        self,
        definitions: Mapping[str, McpConnectionDefinition],
        *,
        lock: McpLock | None = None,
        cwd: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.lock = lock
        self.connections = {
            name: Connection(name, d, cwd=cwd, environ=environ)
            for name, d in sorted(definitions.items())
        }

    def _get(self, name: str) -> Connection:
        conn = self.connections.get(name)
        if conn is None:
            known = ", ".join(self.connections) or "none"
            raise ToolError(f"no MCP connection named {name!r} (connections: {known})")
        return conn

    # ---- host.mcp ------------------------------------------------------------------

    async def list_tools(self, connection: str) -> list[dict[str, Any]]:
        """`host.mcp.list_tools(name)`: the connection's tools as the server lists them."""
        conn = self._get(connection)
        try:
            return [t.wire() for t in await conn.list_tools()]
        except ToolError as exc:
            raise ToolError(f"MCP connection {connection!r}: {exc}") from None

    async def call_tool(self, connection: str, tool: str, arguments: Mapping[str, Any]) -> Any:
        """`host.mcp.call_tool(name, tool, args)`; errors raise `ToolError`."""
        conn = self._get(connection)
        try:
            return await conn.call_tool(tool, arguments)
        except ToolError as exc:
            raise ToolError(f"MCP connection {connection!r}, tool {tool!r}: {exc}") from None

    # ---- the engine's tool provider -------------------------------------------------

    async def tool_entries(self) -> list[ToolEntry]:
        """The tools offered to the model. A connection that cannot be listed is skipped
        (logged) so the turn runs with the rest; pinned-tool rules apply (`mcp.lock`)."""
        listed: list[McpTool] = []
        for name, conn in self.connections.items():
            try:
                listed.extend(await conn.list_tools())
            except Exception as exc:  # one broken connection must not fail the turn
                log.warning("MCP connection %s is unavailable: %s", name, exc)
        names = assign_names((t.connection, t.name) for t in listed)
        entries: list[ToolEntry] = []
        for t in listed:
            approval = False
            if self.lock is not None:
                pin = self.lock.pin(t.connection, t.name, t.digest)
                if pin != "pinned":
                    if self.connections[t.connection].definition.unpinned != "approve":
                        log.warning(
                            "MCP tool %s of %s is %s since mcp.lock was written; held back "
                            "(run `agentkit mcp lock` after reviewing it)",
                            t.name,
                            t.connection,
                            pin,
                        )
                        continue
                    approval = True
            entries.append(self._entry(names[(t.connection, t.name)], t, approval))
        return entries

    def _entry(self, exposed: str, t: McpTool, approval: bool) -> ToolEntry:
        async def run(value: Any, ctx: ToolContext) -> Any:
            return await self.call_tool(t.connection, t.name, value)

        return ToolEntry(
            name=exposed,
            description=t.description,
            input_schema=t.input_schema,
            builtin=run,
            timeout=self.connections[t.connection].definition.timeout + 5.0,
            approval=approval,
        )

    def describe(self) -> list[dict[str, Any]]:
        """For `GET /v1/info` and `agentkit info`: transport and, once connected, tools."""
        out = []
        for name, conn in self.connections.items():
            item: dict[str, Any] = {"name": name, "transport": conn.definition.transport}
            tools = conn.cached_tools
            if tools is not None:
                item["tools"] = [t.name for t in tools]
            out.append(item)
        return out

    async def aclose(self) -> None:
        for conn in self.connections.values():
            with contextlib.suppress(Exception):
                await conn.close()


class McpSource(Protocol):
    """What the connections need of a project bundle (an `AgentBundle`)."""

    @property
    def manifest(self) -> Manifest: ...

    @property
    def root(self) -> Path:
        """The project folder: stdio servers start there."""
        ...

    def mcp_connection(self, name: str) -> McpConnectionDefinition | None: ...


def connections_for(bundle: McpSource) -> McpConnections | None:
    """The connections of a project bundle (None when it has none); nothing opens yet."""
    manifest = bundle.manifest
    if not manifest.mcp_connections:
        return None
    definitions: dict[str, McpConnectionDefinition] = {}
    for spec in manifest.mcp_connections:
        try:
            definition = bundle.mcp_connection(spec.name)
        except Exception:
            log.exception("MCP connection %s could not be imported; it is skipped", spec.name)
            continue
        if definition is not None:
            definitions[spec.name] = definition
    lock = McpLock.from_json(manifest.mcp_lock) if manifest.mcp_lock else None
    return McpConnections(definitions, lock=lock, cwd=bundle.root)


def attach(bundle: McpSource, runtime: Any, services: Any) -> McpConnections | None:
    """Give a composed agent its MCP connections: `host.mcp` and the engine's tools."""
    connections = connections_for(bundle)
    if connections is not None:
        services.mcp = connections
        runtime.tool_providers.append(connections)
    return connections
