"""Host-level routes above any agent: the agent index (while the playground is on) and
host liveness. None of them runs an auth chain."""

from __future__ import annotations

from fastapi import APIRouter, Request

from agentkit.server.host_home import add_home_routes
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.schemas import AgentIndex, AgentOut, Health
from agentkit.server.state import public_base


def host_router(mounts: list[AgentMount], options: ServerOptions, *, health: bool) -> APIRouter:
    router = DeferredRouter(tags=["host"])

    def index(request: Request) -> AgentIndex:
        agents = []
        for mount in mounts:
            base_path = options.base_path(mount.slug)
            base = public_base(request, base_path)
            agents.append(
                AgentOut(
                    slug=mount.slug,
                    name=mount.name,
                    base_path=base_path,
                    playground_url=f"{base}/playground" if options.playground else None,
                )
            )
        return AgentIndex(mode=options.mode, agents=agents)

    if options.playground:
        if options.mode == "multi":  # in single mode `/` is the agent's own root
            add_home_routes(router, mounts, options)

        @router.get("/v1/agents", response_model=AgentIndex, response_model_by_alias=True)
        async def agents(request: Request) -> AgentIndex:
            """The mounted agents as JSON."""
            return index(request)

    if health:

        @router.get("/v1/health", response_model=Health, response_model_by_alias=True)
        async def host_health() -> Health:
            """Host liveness, no auth (for load balancer checks)."""
            return Health()

    return router
