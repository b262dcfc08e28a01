"""A unit-conversion MCP server (stdio), written with the official `mcp` package."""

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("units")
PRECISION = int(os.environ.get("UNITS_PRECISION") or 2)


@server.tool(description="Convert kilometres to miles.")
def km_to_miles(km: float) -> float:
    return round(km * 0.621371, PRECISION)


@server.tool(description="Convert degrees Celsius to degrees Fahrenheit.")
def celsius_to_fahrenheit(celsius: float) -> float:
    return round(celsius * 9 / 5 + 32, PRECISION)


if __name__ == "__main__":
    server.run()
