"""Rendering the documentation pages (`docs/*.md`): markdown to HTML, the sidebar, the
page frame, the index. `docs_site` serves them; `docs_search` renders search results in
the same frame.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path

from agentkit.errors import NotFound

PACKAGED = Path(__file__).parent / "static" / "docs"
PAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,80}$")
_MD_LINK = re.compile(r'href="(?!https?:|mailto:|#|/)([A-Za-z0-9_-]+)\.md(#[^"]*)?"')

_STYLE = """
:root{--bg:#fff;--text:#1d1d1f;--side:#f5f5f7;--line:#ddd;--code:#f0f1f3;--link:#3b5bdb;
color-scheme:light}
@media (prefers-color-scheme:dark){:root{--bg:#15171a;--text:#e6e8eb;--side:#1c1f23;
--line:#2f343a;--code:#23272d;--link:#7c9cff;color-scheme:dark}}
body{font:16px/1.6 system-ui,sans-serif;margin:0;color:var(--text);background:var(--bg);
display:flex}
a{color:var(--link)}
nav{width:240px;flex:none;padding:1.5rem;background:var(--side);min-height:100vh;
box-sizing:border-box}
nav a{display:block;color:var(--text);text-decoration:none;padding:.15rem 0}
nav a.here{font-weight:600}
nav form{margin:0 0 1rem}nav input{width:100%;box-sizing:border-box;font:inherit;
padding:.3rem .5rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);
color:var(--text)}
main{max-width:860px;min-width:0;padding:1.5rem 2.5rem}
.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
pre{background:var(--code);padding:1rem;overflow:auto;border-radius:6px}
code{font-size:.92em;background:var(--code);border-radius:4px;padding:.05em .3em}
pre code{background:none;padding:0}
table{border-collapse:collapse}td,th{border:1px solid var(--line);padding:.3rem .6rem}
.hit{margin:0 0 1rem}.hit p{margin:.2rem 0}mark{background:#fff3b0;color:#1d1d1f}
@media (max-width:700px){body{display:block}nav{width:auto;min-height:0}
nav a{display:inline-block;margin-right:.9rem}
main{padding:1rem}}
"""

# The sidebar's reading order; pages not named here follow, alphabetically.
READING_ORDER = (
    "getting-started",
    "project-layout",
    "authoring",
    "cli",
    "playground",
    "sessions",
    "http-api",
    "auth",
    "models",
    "engine",
    "architecture",
    "costs",
    "channels",
    "slack",
    "mcp",
    "hooks",
    "schedules",
    "evals",
    "ab",
    "testing",
    "embedding",
    "deploy",
    "dynamodb",
    "observability",
)


def docs_root() -> Path | None:
    """Where the markdown lives, or None when this install carries no docs."""
    if PACKAGED.is_dir() and any(PACKAGED.glob("*.md")):
        return PACKAGED
    return None


def page_names(root: Path) -> list[str]:
    names = sorted(p.stem for p in root.glob("*.md") if PAGE_RE.fullmatch(p.stem))
    # The index first, then the reading order, then anything newer alphabetically.
    rank = {name: n for n, name in enumerate(READING_ORDER)}
    return sorted(names, key=lambda n: (n not in ("index", "README"), rank.get(n, len(rank)), n))


def _title(markdown: str, fallback: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return fallback


def inline(markdown: str) -> str:
    """One line of markdown (a page title) as HTML: `code` in a title renders as code."""
    from markdown_it import MarkdownIt

    return str(MarkdownIt("commonmark").renderInline(markdown))


def _plain(markdown: str) -> str:
    """A title without its markdown marks, for `<title>`."""
    return markdown.replace("`", "").replace("*", "")


def sidebar(prefix: str, nav: tuple[tuple[str, str], ...], here: str, query: str = "") -> str:
    links = "".join(
        f'<a href="{prefix}/{name}"{" class=here" if name == here else ""}>{inline(title)}</a>'
        for name, title in nav
    )
    search = (
        f'<form role=search action="{prefix}/search"><label for=q class=vh>Search the docs'
        f'</label><input id=q name=q type=search placeholder="Search the docs" '
        f'value="{html.escape(query)}"></form>'
    )
    return f"<nav>{search}{links}</nav>"


def document(title: str, sidebar: str, body: str) -> str:
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)} · agentkit</title>"
        f'<meta name=viewport content="width=device-width,initial-scale=1">'
        f'<meta name="color-scheme" content="light dark">'
        f"<style>{_STYLE}</style></head><body>{sidebar}<main>{body}</main></body></html>"
    )


@lru_cache(maxsize=256)
def _render(path: Path, mtime: float, prefix: str, nav: tuple[tuple[str, str], ...]) -> str:
    source = path.read_text(encoding="utf-8")
    # Imported on the first page rendered: the API function's cold start never pays for it.
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(source)
    body = _MD_LINK.sub(lambda m: f'href="{prefix}/{m.group(1)}{m.group(2) or ""}"', body)
    title = _plain(_title(source, path.stem))
    return document(title, sidebar(prefix, nav, path.stem), body)


def nav(root: Path) -> tuple[tuple[str, str], ...]:
    return tuple(
        (n, _title((root / f"{n}.md").read_text(encoding="utf-8"), n)) for n in page_names(root)
    )


def render_page(root: Path, name: str, prefix: str = "/docs") -> str:
    if not PAGE_RE.fullmatch(name):
        raise NotFound(f"no documentation page {name[:80]!r}", code="page_not_found")
    path = root / f"{name}.md"
    if not path.is_file():
        raise NotFound(f"no documentation page {name!r}", code="page_not_found")
    return _render(path, path.stat().st_mtime, prefix, nav(root))


def render_index(root: Path, prefix: str = "/docs") -> str:
    """`index.md` when the docs have one, else a generated table of contents."""
    for name in ("index", "README"):
        if (root / f"{name}.md").is_file():
            return render_page(root, name, prefix)
    items = "".join(
        f'<li><a href="{prefix}/{name}">{inline(title)}</a></li>' for name, title in nav(root)
    )
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>agentkit docs</title>"
        f"<style>{_STYLE}</style></head><body><main><h1>agentkit documentation</h1>"
        f"<ul>{items or '<li>No documentation found.</li>'}</ul></main></body></html>"
    )


# The pages are markdown rendered here with one inline stylesheet: no script, no frame, one
# form (the search box, which submits to this server), and no request leaves this server.
# Nobody may frame them (clickjacking).
