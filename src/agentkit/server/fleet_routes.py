"""Fleet control routes of one agent: pause, resume and kill a session, and the agent's
kill switch (`GET /v1/fleet`, `POST /v1/fleet/pause`, `POST /v1/fleet/resume`).

The session routes take the owner or an admin (`403` otherwise, `404` for an unknown id);
the switch routes take an admin only. Every write route takes `Idempotency-Key`. The rules
live in `engine.pausing` and `engine.fleet_switch`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from starlette.responses import Response

from agentkit.engine.fleet_switch import PauseSwitch, SwitchState
from agentkit.engine.service import AgentService, PauseOutcome
from agentkit.errors import Conflict, Forbidden
from agentkit.server.idempotent import IDEMPOTENT_ROUTE, answer_once
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.session_routes import Caller, SessionIdPath
from agentkit.server.state import known_session_id
from agentkit.sessions import Principal


class _Reply(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, defer_build=True)


class PauseResult(_Reply):
    """What a pause, resume or kill left the session as."""

    ok: Literal[True] = True
    session_id: str
    status: Literal["running", "paused", "killed"]
    changed: bool  # False: it was so already, and nothing new was recorded


class SwitchResult(_Reply):
    """The agent's kill switch."""

    ok: Literal[True] = True
    paused: bool
    since: str | None = None
    by: str | None = None


def fleet_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    service = mount.service
    router = DeferredRouter(prefix=options.base_path(mount.slug), tags=[f"{mount.slug}: fleet"])

    def pause_result(session_id: str, outcome: PauseOutcome) -> PauseResult:
        return PauseResult(session_id=session_id, status=outcome.status, changed=outcome.changed)

    def add_session_route(action: Literal["pause", "resume", "kill"], summary: str) -> None:
        async def route(
            request: Request, session_id: SessionIdPath, caller: Caller
        ) -> PauseResult | Response:
            async def work() -> PauseResult:
                sid = known_session_id(session_id)
                control = {"pause": service.pause, "resume": service.resume, "kill": service.kill}
                outcome = await control[action](sid, principal=caller)
                return pause_result(sid, outcome)

            return await answer_once(request, service, caller, f"session_{action}", work)

        path = f"/v1/session/{{session_id}}/{action}"
        _add_write(router, path, f"session_{action}", PauseResult, summary, route)

    add_session_route("pause", "Pause the session: its turn stops at the next step boundary.")
    add_session_route("resume", "Let a paused session take messages and decisions again.")
    add_session_route("kill", "End the session for good (`session.failed`, reason `killed`).")

    @router.get("/v1/fleet", response_model=SwitchResult, response_model_by_alias=True)
    async def fleet(caller: Caller) -> SwitchResult:
        """The agent's kill switch (admin)."""
        return _switch_result(await _switch(service, caller).read())

    def add_switch_route(on: bool, name: str, summary: str) -> None:
        async def route(request: Request, caller: Caller) -> SwitchResult | Response:
            switch = _switch(service, caller)  # a non-admin is refused before anything else

            async def work() -> SwitchResult:
                return _switch_result(await switch.set(on, by=caller.id))

            return await answer_once(request, service, caller, f"fleet_{name}", work)

        _add_write(router, f"/v1/fleet/{name}", f"fleet_{name}", SwitchResult, summary, route)

    add_switch_route(True, "pause", "Turn the kill switch on: every turn stops (admin).")
    add_switch_route(False, "resume", "Lift the kill switch (admin).")
    return router


def _add_write(
    router: APIRouter,
    path: str,
    name: str,
    reply: type[_Reply],
    summary: str,
    route: Callable[..., Any],
) -> None:
    """Mount a write route (it takes `Idempotency-Key`), documented by `summary`."""
    route.__doc__ = summary
    router.post(
        path,
        response_model=reply,
        response_model_by_alias=True,
        openapi_extra=IDEMPOTENT_ROUTE,
        name=name,
    )(route)


def _switch(service: AgentService, caller: Principal) -> PauseSwitch:
    if not caller.admin:
        raise Forbidden("only an admin may read or flip the agent's kill switch")
    switch = service.switch
    if switch is None:
        raise Conflict("this host has no kill switch", code="switch_unavailable")
    return switch


def _switch_result(state: SwitchState) -> SwitchResult:
    return SwitchResult(paused=state.on, since=state.since, by=state.by)
