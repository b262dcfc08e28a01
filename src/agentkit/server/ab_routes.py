"""`GET /v1/abs` (live A/B assignments and per-arm results) and `GET /v1/abs/timeline`
(the same readout over time), folded from the streams."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

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
        from agentkit.ab.service import AbService, KeepsAbSnapshot

        host = mount.host
        snapshot = host.ab_snapshot if isinstance(host, KeepsAbSnapshot) else None
        body = await AbService(service, service.experiments, snapshot=snapshot).report(caller)
        return JSONResponse(body)

    @router.get("/v1/abs/timeline")
    async def abs_timeline(
        caller: Caller,
        experiment: Annotated[str | None, Query(max_length=200)] = None,
        max_points: Annotated[int, Query(alias="maxPoints", ge=2, le=1000)] = 200,
    ) -> JSONResponse:
        """The readout over time, replayed from the recorded turns in time order: per
        comparison (arm against control, per metric) the confidence sequence after each
        turn (`estimate`, `lower`, `upper`, samples `n`, `at`), sessions and turns per arm,
        each guardrail's limit and its arm's sequence, and the pauses. The last point of a
        series is the current readout of `GET /v1/abs`. At most `maxPoints` per series."""
        from agentkit.ab.service import AbService

        del caller  # any caller: like the arm totals of `GET /v1/abs`, no session is shown
        body = await AbService(service, service.experiments).timeline(
            experiment=experiment, max_points=max_points
        )
        return JSONResponse(body)

    return router
