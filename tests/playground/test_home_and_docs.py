"""The host index `/` and the docs site in a browser: styled like the playground in light
and dark, one card per agent with its counts and links, the docs sidebar in reading order,
inline code rendered, and a search box over the pages."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import SLUG, Served
from tests.playground.conftest import Shot

pytestmark = pytest.mark.slow(reason="drives the host index and docs in Chromium")

BACKGROUND = "(n) => getComputedStyle(n).backgroundColor"


def brightness(css_color: str) -> float:
    parts = css_color[css_color.index("(") + 1 : css_color.index(")")].split(",")
    r, g, b = (float(p) for p in parts[:3])
    return (r + g + b) / 3


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_host_index_is_styled_and_describes_each_agent(
    shared_server: Served, page_factory: Any, shot: Shot, scheme: str
) -> None:
    page = page_factory(color_scheme=scheme)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(shared_server.root_url + "/")
    card = page.locator(f".agent-card[data-slug={SLUG}]")
    card.wait_for()
    font = page.locator("body").evaluate("(n) => getComputedStyle(n).fontFamily")
    assert font.startswith("system-ui"), font  # not the browser default, Times
    shade = brightness(page.locator("body").evaluate(BACKGROUND))
    assert (shade > 200) if scheme == "light" else (shade < 60)
    assert "You are a helpful desk agent." in card.inner_text()
    info = httpx.get(f"{shared_server.url}/v1/info").json()
    counts = card.locator(".counts li").all_inner_texts()
    for kind in ("tools", "skills", "channels", "schedules"):
        n = len(info[kind])
        assert f"{n} {kind if n != 1 else kind[:-1]}" in counts, (kind, counts)
    for label in ("Open playground", "Docs", "API reference"):
        href = card.get_by_role("link", name=label).get_attribute("href")
        assert href and httpx.get(href).status_code == 200, label
    assert errors == []  # the stylesheet and icon load under the page's own CSP
    shot(page, f"home-{scheme}")


def test_the_docs_sidebar_follows_reading_order_and_renders_code(
    shared_server: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory()
    page.goto(shared_server.root_url + "/docs/embedding")
    links = page.locator("nav a").all_inner_texts()
    assert links[0] == "Getting started"
    assert links.index("Project layout") < links.index("Sessions and the session store")
    assert not any("`" in text for text in links)
    assert page.locator("nav a code", has_text="agentkit.serve").count() == 1
    assert "`" not in page.title()
    assert page.locator("main p code").count() > 0
    assert "`" not in page.locator("main").inner_text().replace("```", "")
    shot(page, "docs-page")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_docs_search_box_finds_pages(
    shared_server: Served, page_factory: Any, shot: Shot, scheme: str
) -> None:
    page = page_factory(color_scheme=scheme)
    page.goto(shared_server.root_url + "/docs/getting-started")
    box = page.get_by_role("searchbox", name="Search the docs")
    box.fill("continuation token")
    box.press("Enter")
    page.locator(".hit").first.wait_for()
    assert page.locator("h1").inner_text().endswith("for continuation token")
    titles = page.locator(".hit > a").all_inner_texts()
    assert "Sessions and the session store" in titles
    assert page.locator(".hit mark").first.inner_text().lower() == "continuation"
    shot(page, f"docs-search-{scheme}")
    page.goto(shared_server.root_url + "/docs/search?q=zzqx+nothing")
    assert page.locator("h1").inner_text().startswith("No page mentions")
    # Search text comes back escaped, never as markup.
    page.goto(shared_server.root_url + "/docs/search?q=%3Cimg+src%3Dx%3E")
    assert page.locator("main img").count() == 0
