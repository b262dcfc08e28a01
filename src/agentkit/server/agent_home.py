"""The agent's own root, `GET /<slug>/` (or `/` in single mode): never a dead link.

A browser is sent to the playground when it is on, and otherwise gets a small page naming
the agent and the URLs worth opening; a client asking for `application/json` gets the same
facts as JSON. No auth runs here: it reveals nothing `GET /v1/meta` does not.
"""

from __future__ import annotations

import html
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agentkit.server.http_errors import JSONResponse
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter
from agentkit.server.state import public_base

__all__ = ["agent_links", "home_router"]


def agent_links(base: str, root: str, options: ServerOptions) -> dict[str, str]:
    """The useful URLs of one agent whose absolute base URL is `base` (`root`: the host's)."""
    links = {
        "session": f"{base}/v1/session",
        "info": f"{base}/v1/info",
        "health": f"{base}/v1/health",
        "apiDocs": f"{root}/v1/api-docs",
    }
    if options.playground:
        links["playground"] = f"{base}/playground"
    if options.docs:
        links["docs"] = f"{root}/docs"
    return links


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def home_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    base_path = options.base_path(mount.slug)
    router = DeferredRouter(tags=[f"{mount.slug}: meta"])

    async def home(request: Request) -> Response:
        """The agent's root: its playground, or a page (JSON on request) of its URLs."""
        base = public_base(request, base_path)
        root = public_base(request, "")
        links = agent_links(base, root, options)
        if _wants_json(request):
            body: dict[str, Any] = {
                "ok": True,
                "name": mount.name,
                "slug": mount.slug,
                "basePath": base_path,
                "urls": links,
            }
            return JSONResponse(body)
        if options.playground:
            return RedirectResponse(links["playground"], status_code=307)
        return HTMLResponse(_page(mount.name, links))

    paths = ["/"] if not base_path else [base_path, f"{base_path}/"]
    for path in paths:
        router.add_api_route(path, home, methods=["GET"], include_in_schema=False)
    return router


def _page(name: str, links: dict[str, str]) -> str:
    curl = (
        f"curl -X POST {links['session']} -H 'content-type: application/json' "
        """-d '{"message":"hello"}'"""
    )
    rows = "".join(
        f'<li>{html.escape(label)}: <a href="{html.escape(url)}">{html.escape(url)}</a></li>'
        for label, url in links.items()
        if label != "session"
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{html.escape(name)} · agentkit</title></head>"
        "<body style='font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;"
        "padding:0 1rem'>"
        f"<h1>{html.escape(name)}</h1><p>An agent served by agentkit.</p><ul>{rows}</ul>"
        f"<p>Start a session:</p><pre style='white-space:pre-wrap'>{html.escape(curl)}</pre>"
        "</body></html>"
    )
