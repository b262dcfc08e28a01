"""The project's documentation (`docs/*.md`) served as a small static site at `/docs`.

Pages are rendered from markdown once and cached. `agentkit/server/static/docs` is a link to
the repository's `docs/` folder, so a source checkout serves the docs as written and a built
wheel ships a copy of them as package data: there is one copy to keep up to date.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import APIRouter
from starlette.responses import HTMLResponse, RedirectResponse, Response

from agentkit.errors import NotFound
from agentkit.server.routing import DeferredRouter

PACKAGED = Path(__file__).parent / "static" / "docs"
PAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,80}$")
_MD_LINK = re.compile(r'href="(?!https?:|mailto:|#|/)([A-Za-z0-9_-]+)\.md(#[^"]*)?"')

_STYLE = """
body{font:16px/1.6 system-ui,sans-serif;margin:0;color:#1d1d1f;display:flex}
nav{width:220px;padding:1.5rem;background:#f5f5f7;min-height:100vh;box-sizing:border-box}
nav a{display:block;color:#333;text-decoration:none;padding:.15rem 0}
nav a.here{font-weight:600}
main{max-width:860px;padding:1.5rem 2.5rem}
pre{background:#f5f5f7;padding:1rem;overflow:auto}code{font-size:.92em}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.3rem .6rem}
"""


def docs_root() -> Path | None:
    """Where the markdown lives, or None when this install carries no docs."""
    if PACKAGED.is_dir() and any(PACKAGED.glob("*.md")):
        return PACKAGED
    return None


def page_names(root: Path) -> list[str]:
    names = sorted(p.stem for p in root.glob("*.md") if PAGE_RE.fullmatch(p.stem))
    # The index first, then the rest alphabetically.
    return sorted(names, key=lambda n: (n not in ("index", "README"), n))


def _title(markdown: str, fallback: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return fallback


@lru_cache(maxsize=256)
def _render(path: Path, mtime: float, prefix: str, nav: tuple[tuple[str, str], ...]) -> str:
    source = path.read_text(encoding="utf-8")
    # Imported on the first page rendered: the API function's cold start never pays for it.
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(source)
    body = _MD_LINK.sub(lambda m: f'href="{prefix}/{m.group(1)}{m.group(2) or ""}"', body)
    links = "".join(
        f'<a href="{prefix}/{name}"{" class=here" if name == path.stem else ""}>'
        f"{html.escape(title)}</a>"
        for name, title in nav
    )
    title = html.escape(_title(source, path.stem))
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{title} · agentkit</title>"
        f'<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<style>{_STYLE}</style></head><body><nav>{links}</nav><main>{body}</main></body></html>"
    )


def _nav(root: Path) -> tuple[tuple[str, str], ...]:
    return tuple(
        (n, _title((root / f"{n}.md").read_text(encoding="utf-8"), n)) for n in page_names(root)
    )


def render_page(root: Path, name: str, prefix: str = "/docs") -> str:
    if not PAGE_RE.fullmatch(name):
        raise NotFound(f"no documentation page {name[:80]!r}", code="page_not_found")
    path = root / f"{name}.md"
    if not path.is_file():
        raise NotFound(f"no documentation page {name!r}", code="page_not_found")
    return _render(path, path.stat().st_mtime, prefix, _nav(root))


def render_index(root: Path, prefix: str = "/docs") -> str:
    """`index.md` when the docs have one, else a generated table of contents."""
    for name in ("index", "README"):
        if (root / f"{name}.md").is_file():
            return render_page(root, name, prefix)
    items = "".join(
        f'<li><a href="{prefix}/{name}">{html.escape(title)}</a></li>' for name, title in _nav(root)
    )
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>agentkit docs</title>"
        f"<style>{_STYLE}</style></head><body><main><h1>agentkit documentation</h1>"
        f"<ul>{items or '<li>No documentation found.</li>'}</ul></main></body></html>"
    )


# The pages are markdown rendered here with one inline stylesheet: no script, no frame, no
# form, and no request leaves this server. Nobody may frame them (clickjacking).
DOCS_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
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
