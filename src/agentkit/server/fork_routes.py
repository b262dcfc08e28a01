"""`POST /v1/session/:id/fork`: a new session from a prefix of another (`engine.forking`).

Added to the session router (`session_routes.session_router`), beside the routes it answers
like: the fork's `sessionId`, `continuationToken` and `playgroundUrl`, as `POST /v1/session`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Request
from pydantic import Field, StrictInt
from starlette.responses import Response

from agentkit.server.idempotent import IDEMPOTENT_ROUTE, answer_once
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.schemas import _Reply, _Request
from agentkit.server.state import known_session_id, principal, session_links
from agentkit.sessions import Principal

Caller = Annotated[Principal, Depends(principal)]


class ForkBody(_Request):
    # Strict: `"3"`, `3.0` and `true` are refused (400), never read as an index.
    at_index: StrictInt = Field(
        ge=0, le=2**53, description="The last event (by `index`) the fork copies."
    )


class ForkAccepted(_Reply):
    """A fork was made. It has no turn yet: its next message (or decision) starts one."""

    ok: Literal[True] = True
    session_id: str
    continuation_token: str
    from_session_id: str
    at_index: int
    playground_url: str | None = Field(description="Null when the playground is off.")
    trace_url: str


def add_fork_route(router: APIRouter, mount: AgentMount, options: ServerOptions) -> None:
    service = mount.service
    base_path = options.base_path(mount.slug)

    @router.post(
        "/v1/session/{session_id}/fork",
        response_model=ForkAccepted,
        response_model_by_alias=True,
        openapi_extra=IDEMPOTENT_ROUTE,
    )
    async def fork(
        request: Request,
        session_id: Annotated[str, Path(description="A session id (`ses_…`).", max_length=100)],
        body: ForkBody,
        caller: Caller,
    ) -> ForkAccepted | Response:
        """Fork the session at event `atIndex`: a new session whose history is a copy of
        events `0..atIndex`, starting with `session.forked`. The owner's only."""

        async def work() -> ForkAccepted:
            forked = await service.fork(
                known_session_id(session_id), body.at_index, principal=caller
            )
            playground, trace = session_links(request, options, base_path, forked.session_id)
            return ForkAccepted(
                session_id=forked.session_id,
                continuation_token=forked.continuation_token,
                from_session_id=forked.from_session_id,
                at_index=forked.at_index,
                playground_url=playground,
                trace_url=trace,
            )

        return await answer_once(request, service, caller, "fork", work)
