"""Tools from a small MCP server that runs as a child process (stdio).

`${UNITS_PRECISION}` is read from the environment when the server starts; the model sees
the server's tools as `mcp__units__km_to_miles` and `mcp__units__celsius_to_fahrenheit`.
"""

import sys

from agentkit import define_mcp_connection

units = define_mcp_connection(
    command=[sys.executable, "servers/units.py"],  # run from the project folder
    env={"UNITS_PRECISION": "${UNITS_PRECISION}"},
    tools=["km_to_miles", "celsius_to_fahrenheit"],
    description="Unit conversions",
    timeout=10,
)
