"""The brakes and the fork, as the runtime offers them: each checks that the caller owns
the session (or is admin), then hands the record to the module that does the work
(`engine.pausing`, `engine.forking`). `AgentRuntime` binds these as its methods, so each
signature is written once, here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from agentkit.engine import pausing

if TYPE_CHECKING:
    from agentkit.engine.ports import SessionPorts
    from agentkit.engine.service import Forked, PauseOutcome
    from agentkit.engine.session_reads import SessionReads
    from agentkit.project.manifest import Manifest
    from agentkit.sessions import Principal


class Controlled(Protocol):
    """What the controls take from the runtime."""

    @property
    def ports(self) -> SessionPorts: ...

    @property
    def reads(self) -> SessionReads: ...

    @property
    def settle_timeout(self) -> float: ...

    @property
    def manifest(self) -> Manifest: ...


async def pause(rt: Controlled, session_id: str, *, principal: Principal) -> PauseOutcome:
    """Pause the session: its turn stops at its next step boundary (`engine.pausing`)."""
    record = await rt.reads.owned(session_id, principal)
    return await pausing.pause(rt.ports, record, principal)


async def resume(rt: Controlled, session_id: str, *, principal: Principal) -> PauseOutcome:
    """Let a paused session take messages and decisions again."""
    record = await rt.reads.owned(session_id, principal)
    return await pausing.resume(rt.ports, record, principal)


async def kill(rt: Controlled, session_id: str, *, principal: Principal) -> PauseOutcome:
    """End the session for good (`session.failed`, reason `killed`)."""
    record = await rt.reads.owned(session_id, principal)
    return await pausing.kill(rt.ports, record, principal, rt.settle_timeout)


async def fork(rt: Controlled, session_id: str, at_index: int, *, principal: Principal) -> Forked:
    """A new session whose history is events `0..at_index` of this one (`engine.forking`)."""
    from agentkit.engine.forking import fork_session

    record = await rt.reads.owned(session_id, principal)
    return await fork_session(rt, record, at_index, principal=principal)


__all__ = ["Controlled", "fork", "kill", "pause", "resume"]
