"""`/v1/api-docs`: Swagger UI over the app's OpenAPI document, served whole from this
server. Its script, stylesheet and icon are the copies the `fastapi-offline` package ships
(a current Swagger UI build, no CDN), so the page works offline and no third-party script
ever runs in the API's origin; the page's CSP lets nothing else in."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

from fastapi import APIRouter
from starlette.responses import HTMLResponse, Response

from agentkit.errors import NotFound
from agentkit.server.routing import DeferredRouter

API_DOCS_URL = "/v1/api-docs"
ASSETS_URL = f"{API_DOCS_URL}/assets"
# Swagger UI sets style attributes as it renders (hence 'unsafe-inline' for styles only);
# its scripts, and the document it fetches, come from this server alone.
API_DOCS_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
API_DOCS_HEADERS = {
    "content-security-policy": API_DOCS_CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}
# The vendored files this page uses, and their media types: nothing else is served.
SWAGGER_FILES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon.png": "image/png",
}
START_SCRIPT = "start.js"


def page(openapi_url: str) -> str:
    """The explorer's HTML: the vendored files, then `start.js`, which builds the UI."""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>agentkit API</title>
<link rel="icon" type="image/png" href="{ASSETS_URL}/favicon.png">
<link rel="stylesheet" href="{ASSETS_URL}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-openapi-url="{openapi_url}"></div>
<script src="{ASSETS_URL}/swagger-ui-bundle.js"></script>
<script src="{ASSETS_URL}/{START_SCRIPT}"></script>
</body>
</html>
"""


# A file, not an inline script, so the CSP needs no 'unsafe-inline' for scripts. No
# validator badge: it would send the document to a public validation service.
START_JS = """\
(function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  });
})();
"""


@lru_cache(maxsize=len(SWAGGER_FILES))
def swagger_file(name: str) -> bytes:
    """One of Swagger UI's vendored files (`SWAGGER_FILES`), read once."""
    return (files("fastapi_offline") / "static" / name).read_bytes()


def api_docs_router(openapi_url: str) -> APIRouter:
    """The explorer page and its assets, for `install_router`."""
    router = DeferredRouter()

    @router.get(API_DOCS_URL, include_in_schema=False)
    async def api_docs() -> HTMLResponse:
        return HTMLResponse(page(openapi_url), headers=API_DOCS_HEADERS)

    @router.get(ASSETS_URL + "/{name}", include_in_schema=False)
    async def api_docs_asset(name: str) -> Response:
        headers = {**API_DOCS_HEADERS, "cache-control": "public, max-age=3600"}
        if name == START_SCRIPT:
            return Response(START_JS, media_type="text/javascript", headers=headers)
        media_type = SWAGGER_FILES.get(name)
        if media_type is None:
            raise NotFound(f"no API docs asset {name[:80]!r}", code="asset_not_found")
        return Response(swagger_file(name), media_type=media_type, headers=headers)

    return router
