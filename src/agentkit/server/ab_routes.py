"""`GET /v1/abs`: live A/B assignments and per-arm results, folded from the streams."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from agentkit.server.http_errors import JSONResponse
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.state import principal
from agentkit.sessions import Principal

Caller = Annotated[Principal, Depends(principal)]


def ab_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    service = mount.service
    router = DeferredRouter(prefix=options.base_path(mount.slug), tags=[f"{mount.slug}: A/B"])

    @router.get("/v1/abs")
    async def abs_report(caller: Caller) -> JSONResponse:
        """Per-session assignments (the caller's own sessions unless admin), per-arm totals
        and means, comparisons with confidence sequences, the split check, guardrails and
        `config` from `agent/ab.config.py`."""
        # Imported here: the report's statistics load on the first A/B request only.
        from agentkit.ab.service import AbService

        snapshot = getattr(mount.host, "ab_snapshot", None)
        body = await AbService(service, service.experiments, snapshot=snapshot).report(caller)
        return JSONResponse(body)

    return router
