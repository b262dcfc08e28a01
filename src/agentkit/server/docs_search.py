"""Search over the documentation pages (`/docs/search?q=<words>`), answered on the server
so the page needs no script: the pages holding every word, best first, each with the first
occurrence highlighted in context."""

from __future__ import annotations

import html
from pathlib import Path

from agentkit.server.docs_pages import document, inline, nav, sidebar

__all__ = ["render_search", "search_pages"]

SEARCH_HITS = 30


def _snippet(text: str, at: int, length: int, width: int = 90) -> str:
    start = max(0, at - width)
    end = min(len(text), at + length + width)
    before, hit, after = text[start:at], text[at : at + length], text[at + length : end]
    return (
        ("…" if start else "")
        + html.escape(before)
        + f"<mark>{html.escape(hit)}</mark>"
        + html.escape(after)
        + ("…" if end < len(text) else "")
    )


def search_pages(root: Path, query: str) -> list[tuple[str, str, int, str]]:
    """Pages holding every word of `query` (case-insensitive), best first: name, title,
    how many times the words occur, and a snippet around the first one."""
    words = [w for w in query.lower().split() if w][:8]
    if not words:
        return []
    hits = []
    for name, title in nav(root):
        text = (root / f"{name}.md").read_text(encoding="utf-8")
        flat = " ".join(text.split())
        lower = flat.lower()
        if not all(w in lower for w in words):
            continue
        count = sum(lower.count(w) for w in words) + 10 * sum(w in title.lower() for w in words)
        first = lower.find(words[0])
        hits.append((name, title, count, _snippet(flat, first, len(words[0]))))
    return sorted(hits, key=lambda h: -h[2])[:SEARCH_HITS]


def render_search(root: Path, query: str, prefix: str = "/docs") -> str:
    """The results page of a search over the docs."""
    query = query[:200]
    hits = search_pages(root, query)
    if not query.strip():
        body = (
            "<h1>Search the docs</h1><p>Type words in the box: pages holding all of them show.</p>"
        )
    elif not hits:
        body = f"<h1>No page mentions {html.escape(query)}</h1><p>Try fewer or other words.</p>"
    else:
        items = "".join(
            f'<div class=hit><a href="{prefix}/{name}">{inline(title)}</a><p>{snippet}</p></div>'
            for name, title, _, snippet in hits
        )
        found = f"{len(hits)} page{'s' if len(hits) != 1 else ''}"
        body = f"<h1>{found} for {html.escape(query)}</h1>{items}"
    return document(f"Search: {query}", sidebar(prefix, nav(root), "", query), body)
