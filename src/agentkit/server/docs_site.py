"""The project's documentation (`docs/*.md`) served as a small static site at `/docs`.

Pages are rendered from markdown once and cached. `agentkit/server/static/docs` is a link to
the repository's `docs/` folder, so a source checkout serves the docs as written and a built
wheel ships a copy of them as package data: there is one copy to keep up to date.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agentkit.errors import NotFound
from agentkit.server.docs_pages import PACKAGED, PAGE_RE, docs_root, render_index, render_page
from agentkit.server.routing import DeferredRouter

DOCS_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
DOCS_HEADERS = {
    "content-security-policy": DOCS_CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def docs_router(root: Path | None = None, *, deferred: bool = False) -> APIRouter:
    """The documentation site's routes. `deferred` gives a `DeferredRouter`, for
    `install_router` (the app's own use, so a cold start never builds these routes)."""
    router = DeferredRouter(tags=["docs"]) if deferred else APIRouter(tags=["docs"])
    # Given as raw content: with `model`, FastAPI would document the error as text/html.
    error_json = {"schema": {"$ref": "#/components/schemas/ErrorBody"}}
    not_found: dict[int | str, dict[str, Any]] = {
        404: {"description": "No such page", "content": {"application/json": error_json}}
    }

    @router.get("/docs", response_class=HTMLResponse)
    async def docs_index() -> Response:
        """The documentation's index page."""
        where = root or docs_root()
        if where is None:
            return HTMLResponse(
                "<!doctype html><title>docs</title><p>No documentation found.",
                headers=DOCS_HEADERS,
            )
        return HTMLResponse(render_index(where), headers=DOCS_HEADERS)

    @router.get("/docs/search", response_class=HTMLResponse)
    async def docs_search(q: str = "") -> Response:
        """Pages of the documentation holding every word of `q`."""
        where = root or docs_root()
        if where is None:
            raise NotFound("no documentation is installed", code="page_not_found")
        from agentkit.server.docs_search import render_search

        return HTMLResponse(render_search(where, q), headers=DOCS_HEADERS)

    @router.get(
        "/docs/{page}",
        response_class=HTMLResponse,
        responses={**not_found, 308: {"description": "Redirect from `<page>.md`"}},
    )
    async def docs_page(page: str) -> Response:
        """One documentation page, rendered from markdown."""
        where = root or docs_root()
        if where is None:
            raise NotFound("no documentation is installed", code="page_not_found")
        name = page.removesuffix(".html").removesuffix(".md")
        if name != page and PAGE_RE.fullmatch(name):
            return RedirectResponse(f"/docs/{name}", status_code=308, headers=DOCS_HEADERS)
        return HTMLResponse(render_page(where, name), headers=DOCS_HEADERS)

    return router


__all__ = ["DOCS_CSP", "DOCS_HEADERS", "PACKAGED", "docs_router"]
