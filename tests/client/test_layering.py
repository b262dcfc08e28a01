"""The client speaks HTTP only: importing it loads no server, engine, store or uvicorn; and
importing `agentkit` does not load the embedded server until `agentkit.serve` is used."""

from __future__ import annotations

import json
import subprocess
import sys

import agentkit.client

FORBIDDEN = ("agentkit.server", "agentkit.engine", "agentkit.store", "agentkit.hosts", "uvicorn")


def loaded_after(code: str) -> set[str]:
    probe = f"{code}; import sys, json; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_the_client_imports_no_server_side_code() -> None:
    loaded = loaded_after("import agentkit.client")
    assert not [m for m in loaded if m.startswith(FORBIDDEN)]


def test_agentkit_serve_is_loaded_on_first_use() -> None:
    assert "agentkit.hosts.embedded" not in loaded_after("import agentkit")
    assert "agentkit.hosts.embedded" in loaded_after("import agentkit; agentkit.serve")


def test_the_client_exports() -> None:
    assert agentkit.client.__all__ == sorted(set(agentkit.client.__all__))
    for name in agentkit.client.__all__:
        assert getattr(agentkit.client, name).__doc__, name


STREAM_READS = {"iter_lines", "aiter_lines", "iter_text", "aiter_text", "iter_raw", "aiter_raw"}
SERVING = ("client", "server", "aws")  # the reader, and the code that writes streams


def test_the_client_is_the_only_reader_of_event_streams() -> None:
    """One implementation of resumption: no other module (the CLI's `agentkit stream`, the
    MCP connections of agent-to-agent delegation, evals) reads a response line by line or
    asks for a `startIndex`; they go through `agentkit.client` or never stream."""
    import ast
    from pathlib import Path

    root = Path(agentkit.client.__file__).resolve().parents[1]
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).parts[0] in SERVING:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in STREAM_READS:
                offenders.append(f"{path.relative_to(root)}:{node.lineno} {node.attr}")
            if isinstance(node, ast.Constant) and node.value == "startIndex":
                offenders.append(f"{path.relative_to(root)}:{node.lineno} startIndex")
    assert offenders == []
    stream_cli = (root / "cli" / "stream.py").read_text(encoding="utf-8")
    assert "from agentkit.client import Client" in stream_cli
