"""The playground's eval routes (always registered, behind the same auth chain):

    GET  /v1/dev/evals               {evals, config: {maxPlaygroundRuns, durableRuns}}
    GET  /v1/dev/evals/runs          {runs (newest first), activeRunId?}
    POST /v1/dev/evals/runs          {filterIds?, tags?} -> 202 snapshot | 404 | 409
    GET  /v1/dev/evals/runs/{runId}  the run's snapshot (404 when unknown)

The routes are a thin layer over `agentkit.evals.runs.EvalRunService`, which the mount's
host makes and keeps (`evals.runs.ServesEvalRuns`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, ConfigDict, Field

from agentkit.errors import NotFound
from agentkit.server.http_errors import JSONResponse
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.state import principal
from agentkit.sessions import Principal

if TYPE_CHECKING:
    from agentkit.evals.runs import EvalRunService

__all__ = ["eval_router"]

Caller = Annotated[Principal, Depends(principal)]
RunId = Annotated[str, Path(min_length=1, max_length=100)]
Entry = Annotated[str, Field(min_length=1, max_length=300)]


class StartRun(BaseModel):
    """`POST /v1/dev/evals/runs`: OR within each list, AND across the two."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    filter_ids: list[Entry] | None = Field(default=None, alias="filterIds", max_length=500)
    tags: list[Entry] | None = Field(default=None, max_length=100)


def eval_service(mount: AgentMount) -> EvalRunService | None:
    """The mount's eval service (made once and kept by its host), or None when the host
    serves no evals (`evals.runs.ServesEvalRuns`)."""
    # Imported here: the eval runner is loaded by the first eval request, not at cold start.
    from agentkit.evals.runs import ServesEvalRuns

    host = mount.host
    return host.eval_runs if isinstance(host, ServesEvalRuns) else None


def eval_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    # Deferred routes, and the service made on the first eval request: an app that never
    # serves one (a Lambda cold start answering another route) builds none of it.
    router = DeferredRouter(prefix=options.base_path(mount.slug), tags=[f"{mount.slug}: evals"])
    made: list[EvalRunService | None] = []

    def current() -> EvalRunService | None:
        if not made:
            made.append(eval_service(mount))
        return made[0]

    @router.get("/v1/dev/evals")
    async def list_evals(caller: Caller) -> dict[str, Any]:
        """The discovered eval cases and the project's eval config."""
        service = current()
        if service is None:
            return {
                "ok": True,
                "evals": [],
                "config": {"maxPlaygroundRuns": 0, "durableRuns": False},
            }
        return {"ok": True, **service.listing()}

    @router.get("/v1/dev/evals/runs")
    async def list_runs(caller: Caller) -> dict[str, Any]:
        """Recent run snapshots, newest first, and the active run's id."""
        service = current()
        if service is None:
            return {"ok": True, "runs": []}
        return {"ok": True, **await service.runs()}

    @router.post("/v1/dev/evals/runs", status_code=202)
    async def start_run(body: StartRun, caller: Caller) -> JSONResponse:
        """Start a run: 202 with its snapshot, 404 when nothing matches, 409 while one runs."""
        service = current()
        if service is None:
            raise NotFound("this agent has no evals")
        snap = await service.start(body.filter_ids or (), body.tags or ())
        return JSONResponse({"ok": True, **snap}, status_code=202)

    @router.get("/v1/dev/evals/runs/{run_id}")
    async def get_run(run_id: RunId, caller: Caller) -> dict[str, Any]:
        """A run's progress per case, then its final `completed` or `failed` status."""
        service = current()
        if service is None:
            raise NotFound(f"unknown eval run {run_id!r}")
        return {"ok": True, **await service.get(run_id)}

    return router
