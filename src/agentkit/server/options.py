"""What the app factory is given: the agents to mount and how to serve them.

A host (local or AWS) composes each agent's services and hands them over as `AgentMount`s;
the app never knows which host it runs on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from agentkit.engine.service import AgentService
from agentkit.server.auth import AuthChain, local_dev_strict

Layout = Literal["single", "multi"]
DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024


@runtime_checkable
class NamedHost(Protocol):
    """Optional, on a mount's host: what `GET /v1/meta` reports as the host (`aws`,
    `aws-emulated`); a host without it is reported as `local`."""

    @property
    def kind(self) -> str: ...


@dataclass(slots=True)
class AgentMount:
    """One agent served by the app. `host` is the object that composed it (a `LocalHost`,
    an `AwsHost`, a test's scheduling rig). Hosts differ in what they offer, so a route
    asks it only through a runtime-checkable port of the concept it needs, and answers
    as documented when the host lacks it: `NamedHost` here, `ab.service.KeepsAbSnapshot`,
    `evals.runs.ServesEvalRuns`, `mcp.ports.HoldsMcp`, and the scheduling ports
    `DispatchesSchedules`, `ListsSchedules` and `KeepsReminders`."""

    slug: str
    service: AgentService
    host: object = None
    channels: Any = None  # the agent's `ChannelRuntime` when it has channels to serve

    @property
    def name(self) -> str:
        return self.service.manifest.agent.name


@dataclass(slots=True)
class ServerOptions:
    """How the app serves its agents (the `agentkit serve` flags, minus the networking)."""

    mode: Layout = "multi"
    dev: bool = False
    auth: AuthChain = field(default_factory=lambda: AuthChain([local_dev_strict()]))
    playground: bool = True
    docs: bool = True
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # Longest a single stream request follows live, in seconds (None: until the client
    # leaves). Lambda hosts set it so a response ends inside the invocation's time limit.
    max_stream_window: float | None = None
    # Unused by the streams since they share one tail per session (`engine.tails`), whose
    # followers wait for appends with no timer; kept so existing callers still build.
    stream_poll: float = 15.0
    # A host that buffers each response until it ends (Lambda through Mangum) shows the
    # client nothing before then: it ends a stream response with its first events (a long
    # poll), and the client asks again from the next index at once.
    stream_until_first_events: bool = False
    log_capacity: int = 2000
    # How long shutdown waits for writes sent with an Idempotency-Key that still run (their
    # client may be gone), so they finish and keep their answers for the retry.
    drain_timeout: float = 10.0

    def base_path(self, slug: str) -> str:
        return "" if self.mode == "single" else f"/{slug}"
