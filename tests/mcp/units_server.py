"""A small MCP server built with the official SDK, for the connection tests.

    python units_server.py                # stdio
    python units_server.py http PORT      # streamable HTTP on 127.0.0.1:PORT/mcp

`UNITS_DESCRIPTION` overrides one tool's description (to test pinning); `crash` ends the
process at once (a server dying mid-session); `secret`, `auth_header` and `trace_header` echo
what the connection sent (to test `${VAR}` expansion and the trace context).
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("units")


@server.tool(description=os.environ.get("UNITS_DESCRIPTION", "Convert kilometres to miles."))
def km_to_miles(km: float) -> float:
    return round(km * 0.621371, 3)


@server.tool(description="The server's process id.")
def server_pid() -> int:
    return os.getpid()


@server.tool(description="Stop the server process immediately.")
def crash() -> str:
    os._exit(3)


@server.tool(description="The UNITS_SECRET the server was started with.")
def secret() -> str:
    return os.environ.get("UNITS_SECRET", "")


@server.tool(description="The Authorization header of this request.")
def auth_header(ctx: Context) -> str:
    request = ctx.request_context.request
    return "" if request is None else str(request.headers.get("authorization", ""))


@server.tool(description="The traceparent header of this request (empty when none came).")
def trace_header(ctx: Context) -> str:
    request = ctx.request_context.request
    return "" if request is None else str(request.headers.get("traceparent", ""))


@server.tool(description="Sleep for a while, then answer.")
async def nap(seconds: float) -> str:
    import asyncio

    await asyncio.sleep(seconds)
    return "rested"


@server.tool(description="Always fails.")
def broken() -> str:
    raise ToolError("the gauge is broken")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        import socket

        import uvicorn

        app = server.streamable_http_app(json_response=True)
        # Port 0 lets the kernel pick a free port; the port is the first line on stdout.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", int(sys.argv[2])))
        print(sock.getsockname()[1], flush=True)
        config = uvicorn.Config(app, log_level="warning")
        uvicorn.Server(config).run(sockets=[sock])
    else:
        server.run()
