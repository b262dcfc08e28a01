"""`agent/mcp.lock`: pinned MCP tool definitions.

A connected server's tool descriptions and schemas are prompt input the server can change
at any time. `agentkit mcp lock` records, per connection, each tool's exposed name and a
hash of its description and input schema; `agentkit build` bakes the file into the
manifest. At run time a tool missing from the lock or whose hash differs is held back
(or, with `unpinned="approve"`, offered behind the approval flow). Without a lock file
nothing is pinned.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

LOCK_FILE = "mcp.lock"
LOCK_VERSION = 1
Pin = Literal["pinned", "new", "changed"]


def tool_hash(description: str | None, input_schema: Mapping[str, Any]) -> str:
    """`sha256:` of the canonical JSON of description and schema."""
    body = json.dumps(
        {"description": description or "", "inputSchema": input_schema},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class McpLock:
    """The parsed lock: connection -> tool -> {exposedName, hash}."""

    connections: Mapping[str, Mapping[str, Mapping[str, str]]]

    def pin(self, connection: str, tool: str, digest: str) -> Pin:
        entry = self.connections.get(connection, {}).get(tool)
        if entry is None:
            return "new"
        return "pinned" if entry.get("hash") == digest else "changed"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": LOCK_VERSION,
            "connections": {c: dict(t) for c, t in sorted(self.connections.items())},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> McpLock:
        if data.get("version") != LOCK_VERSION:
            raise ValueError(f"unsupported mcp.lock version {data.get('version')!r}")
        raw = data.get("connections")
        if not isinstance(raw, dict):
            raise ValueError("mcp.lock: `connections` must be an object")
        conns: dict[str, dict[str, dict[str, str]]] = {}
        for name, tools in raw.items():
            if not isinstance(tools, dict):
                raise ValueError(f"mcp.lock: connection {name!r} must map tools to entries")
            conns[str(name)] = {
                str(t): {"exposedName": str(e.get("exposedName", "")), "hash": str(e.get("hash"))}
                for t, e in tools.items()
                if isinstance(e, dict)
            }
        return cls(conns)


def read_lock(agent_dir: Path) -> McpLock | None:
    """The project's lock, None when there is none (raises ValueError when unreadable)."""
    path = agent_dir / LOCK_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"mcp.lock is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("mcp.lock must hold a JSON object")
    return McpLock.from_json(data)


def write_lock(agent_dir: Path, lock: McpLock) -> Path:
    path = agent_dir / LOCK_FILE
    path.write_text(json.dumps(lock.to_json(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
