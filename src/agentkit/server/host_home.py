"""The host's web index, `GET /` in multi mode: one card per mounted agent.

Each card gives the agent's name, a description (the first line of its instructions), how
many tools, skills, channels and schedules it has, and links to its playground, the docs
and the API reference. The page is styled by the playground's own stylesheet (light and
dark follow the system) plus `home.css`, served from the package at `/_assets/<file>`: no
inline script or style, so it keeps the playground's content security policy.
"""

from __future__ import annotations

import html

from fastapi import APIRouter, Request
from starlette.responses import HTMLResponse, Response

from agentkit.project.frontmatter import first_line
from agentkit.server.agent_home import agent_links
from agentkit.server.options import AgentMount, ServerOptions
from agentkit.server.playground import SECURITY_HEADERS, asset_response
from agentkit.server.state import public_base

__all__ = ["add_home_routes", "agent_counts"]

ASSET_PREFIX = "/_assets"  # a slug never starts with "_", so no agent's URLs meet these
DESCRIPTION_CHARS = 240


def agent_counts(mount: AgentMount) -> dict[str, int]:
    """What an agent is made of, as the index counts it."""
    manifest = mount.service.manifest
    return {
        "tools": len(manifest.tools),
        "skills": len(manifest.skills),
        "channels": len(manifest.channels),
        "schedules": len(manifest.schedules),
    }


def _description(mount: AgentMount) -> str:
    text = first_line(mount.service.manifest.instructions)
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"


def _plural(count: int, word: str) -> str:
    return f"{count} {word if count == 1 else word + 's'}"


def _card(mount: AgentMount, links: dict[str, str], base_path: str) -> str:
    counts = "".join(
        f"<li>{html.escape(_plural(n, kind.removesuffix('s')))}</li>"
        for kind, n in agent_counts(mount).items()
    )
    wanted = [("playground", "Open playground"), ("docs", "Docs"), ("apiDocs", "API reference")]
    actions = "".join(
        f'<a class="{"button primary" if key == "playground" else "button ghost"}" '
        f'href="{html.escape(links[key])}">{label}</a>'
        for key, label in wanted
        if key in links
    )
    description = _description(mount) or "An agent served by agentkit."
    return (
        f'<article class="agent-card" data-slug="{html.escape(mount.slug)}">'
        f"<h2>{html.escape(mount.name)} <code>{html.escape(base_path or '/')}</code></h2>"
        f'<p class="muted">{html.escape(description)}</p>'
        f'<ul class="counts" aria-label="Contents">{counts}</ul>'
        f'<div class="row">{actions}</div></article>'
    )


def render_home(request: Request, mounts: list[AgentMount], options: ServerOptions) -> str:
    """The index page's HTML."""
    root = public_base(request, "")
    cards = "".join(
        _card(
            mount,
            agent_links(public_base(request, options.base_path(mount.slug)), root, options),
            options.base_path(mount.slug),
        )
        for mount in mounts
    )
    docs = f'<a href="{root}/docs">Documentation</a> · ' if options.docs else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        '<meta name="color-scheme" content="light dark"><title>agentkit</title>'
        f'<link rel="icon" href="{ASSET_PREFIX}/icon.svg" type="image/svg+xml">'
        f'<link rel="stylesheet" href="{ASSET_PREFIX}/style.css">'
        f'<link rel="stylesheet" href="{ASSET_PREFIX}/home.css"></head>'
        '<body class="home"><header class="topbar"><div class="brand">'
        f'<img src="{ASSET_PREFIX}/icon.svg" alt="" width="22" height="22"><span>agentkit</span>'
        f'</div></header><main id="main" class="home-main"><h1>{_plural(len(mounts), "agent")}'
        f'</h1><div class="agents">{cards}</div><p class="muted">{docs}'
        f'<a href="{root}/v1/api-docs">API reference</a> · '
        f'<a href="{root}/v1/agents">JSON</a></p></main></body></html>'
    )


def add_home_routes(router: APIRouter, mounts: list[AgentMount], options: ServerOptions) -> None:
    """`GET /` and the assets it links to."""

    async def home(request: Request) -> HTMLResponse:
        """A web index of the mounted agents."""
        return HTMLResponse(render_home(request, mounts, options), headers=SECURITY_HEADERS)

    async def home_asset(name: str) -> Response:
        return asset_response(name)

    router.add_api_route("/", home, methods=["GET"], response_class=HTMLResponse)
    router.add_api_route(
        f"{ASSET_PREFIX}/{{name}}", home_asset, methods=["GET"], include_in_schema=False
    )
