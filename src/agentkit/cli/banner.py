"""What `agentkit serve` prints on start: the URLs a person can open and one `curl` that
works as printed (on the default loopback setup)."""

from __future__ import annotations

import shlex

WILDCARD_HOSTS = {"0.0.0.0", "::", ""}


def browsable_host(host: str) -> str:
    """A host a browser on this machine can open (a wildcard bind means loopback)."""
    if host in WILDCARD_HOSTS:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def banner_lines(
    *,
    host: str,
    port: int,
    slugs: list[str],
    single: bool,
    playground: bool,
    docs: bool,
    bearer: bool,
) -> list[str]:
    """The start-up lines, one block per agent, then the docs."""
    root = f"http://{browsable_host(host)}:{port}"
    lines: list[str] = []
    for slug in slugs:
        base = root if single else f"{root}/{slug}"
        lines.append(f"agentkit: serving {slug} at {base}/")
        if playground:
            lines.append(f"  playground  {base}/playground")
        curl = [
            "curl",
            "-X",
            "POST",
            f"{base}/v1/session",
            "-H",
            "content-type: application/json",
        ]
        if bearer:
            curl += ["-H", "authorization: Bearer <token>"]
        curl += ["-d", '{"message":"hello"}']
        lines.append(f"  try         {shlex.join(curl)}")
    if docs:
        lines.append(f"  docs        {root}/docs")
    return lines
