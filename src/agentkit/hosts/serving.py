"""Build what `agentkit serve` serves, for `agentkit.serve(...)`: one `LocalHost` per agent
folder and the FastAPI app mounting them, composed from the same parts and in the same way
as the command does (its own checks and messages stay in `cli/serve.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentkit.errors import ProjectError
from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle

if TYPE_CHECKING:  # the limits module loads uvicorn, which only serving needs
    from agentkit.hosts.connection_limits import ConnectionLimits


@dataclass(frozen=True, slots=True)
class HostConfig:
    """The options of `agentkit serve` that decide what is served (not where)."""

    mode: Literal["single", "multi"] = "multi"
    dev: bool = False
    bearer_tokens: list[str] = field(default_factory=list)
    allow_anonymous: bool = False
    playground: bool = True
    docs: bool = True
    schedules: bool = True
    state_root: Path | None = None
    max_body_bytes: int | None = None
    bound_host: str | None = None  # the address served on (loopback Host checks use it)
    connection_limits: ConnectionLimits | None = None  # None: the defaults (docs/auth.md)


def discover(dirs: list[Path]) -> list[AgentBundle]:
    """The agent folders as bundles; `ProjectError` if one has error diagnostics."""
    bundles = []
    for d in dirs:
        if not d.is_dir():
            raise ValueError(f"{d} is not a directory")
        bundles.append(AgentBundle.discover(d.resolve()))
    errors = [
        f"{b.root}: error {d.code} {d.path}: {d.message}"
        for b in bundles
        for d in b.manifest.diagnostics
        if d.severity == "error"
    ]
    if errors:
        raise ProjectError("\n".join(errors))
    return bundles


def build_app(
    bundles: list[AgentBundle],
    config: HostConfig,
    *,
    startup_errors: list[BaseException] | None = None,
) -> tuple[Any, list[LocalHost]]:
    """The app and its hosts; `ValueError` for options that cannot be served together.

    A host that fails to start (its state directory is served by another process, say)
    fails the app's startup; `startup_errors` collects why, for a caller that wants to
    raise it rather than read it in the server's log."""
    from agentkit.server.app import create_app
    from agentkit.server.auth import AuthChain
    from agentkit.server.options import DEFAULT_MAX_BODY_BYTES, ServerOptions

    if config.mode == "single" and len(bundles) != 1:
        raise ValueError("--mode single serves exactly one --dir")
    slugs = [b.slug for b in bundles]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"two agents share a slug: {sorted(slugs)}")
    host_options = LocalHostOptions(
        state_root=config.state_root.resolve() if config.state_root else None,
        dev=config.dev,
        schedules=config.schedules,
    )
    hosts = [LocalHost(b, host_options) for b in bundles]
    auth = AuthChain.from_flags(
        bearer_tokens=config.bearer_tokens,
        allow_anonymous=config.allow_anonymous,
        dev=config.dev,
        bound_host=config.bound_host,
    )
    options = ServerOptions(
        mode=config.mode,
        dev=config.dev,
        auth=auth,
        playground=config.playground,
        docs=config.docs,
        max_body_bytes=config.max_body_bytes or DEFAULT_MAX_BODY_BYTES,
    )
    app = create_app(
        [h.mount() for h in hosts],
        options,
        on_startup=[_noting(h.start, startup_errors) for h in hosts],
        on_shutdown=[h.aclose for h in hosts],
    )
    return app, hosts


def _noting(
    start: Callable[[], Awaitable[None]], errors: list[BaseException] | None
) -> Callable[[], Awaitable[None]]:
    if errors is None:
        return start

    async def run() -> None:
        try:
            await start()
        except Exception as exc:
            errors.append(exc)
            raise

    return run
