"""The playground: a static single-page app over the public HTTP API.

Served at `<base>/playground` (the page) and `<base>/playground/assets/<file>` (its
scripts and styles), where `<base>` is `/<slug>` in multi mode and empty in single mode.
The app factory includes this router only while the playground is on (`--no-playground`
removes it). The page calls the same JSON routes as curl does; it has no privileged surface.

The assets are plain files shipped inside the package (no CDN, no build step). The page
finds its API base from its own URL, so it also works behind a path prefix such as an
API Gateway stage.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agentkit.errors import NotFound
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.routing import DeferredRouter

ASSETS = Path(__file__).parent / "static" / "playground"
ASSET_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,80}$")
MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}
# Only files of this package run or style the page: model text can never bring a script,
# a stylesheet or a frame with it, even if a rendering bug let markup through.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}

__all__ = ["asset", "asset_response", "page", "playground_router"]


@lru_cache(maxsize=1)
def page() -> str:
    """The SPA's HTML shell."""
    return (ASSETS / "index.html").read_text(encoding="utf-8")


def asset(name: str) -> tuple[bytes, str]:
    """One asset's bytes and media type; `NotFound` for anything not shipped."""
    suffix = Path(name).suffix
    if not ASSET_RE.fullmatch(name) or suffix not in MEDIA_TYPES or name.startswith("."):
        raise NotFound(f"no playground asset {name[:80]!r}", code="asset_not_found")
    path = ASSETS / name
    if not path.is_file() or path.parent != ASSETS:
        raise NotFound(f"no playground asset {name[:80]!r}", code="asset_not_found")
    return path.read_bytes(), MEDIA_TYPES[suffix]


def asset_response(name: str) -> Response:
    """An asset as served (not sniffed, revalidated on each use); `NotFound` as `asset`."""
    body, media_type = asset(name)
    return Response(
        body,
        media_type=media_type,
        headers={"x-content-type-options": "nosniff", "cache-control": "no-cache"},
    )


def playground_router(mount: AgentMount, options: ServerOptions) -> APIRouter:
    """The playground page and its assets for one mounted agent."""
    router = DeferredRouter(prefix=options.base_path(mount.slug), tags=["playground"])

    @router.get("/playground", include_in_schema=False)
    async def playground_page() -> HTMLResponse:
        return HTMLResponse(page(), headers=SECURITY_HEADERS)

    @router.get("/playground/", include_in_schema=False)
    async def playground_slash() -> Response:
        # Relative asset URLs resolve against the page URL without its trailing slash.
        return RedirectResponse("../playground", status_code=308)

    @router.get("/playground/assets/{name}", include_in_schema=False)
    async def playground_asset(name: str) -> Response:
        return asset_response(name)

    return router
