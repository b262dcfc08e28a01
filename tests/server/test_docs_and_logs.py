"""The documentation site and the log ring buffer."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from agentkit.server import docs_site
from agentkit.server.docs_site import docs_router
from agentkit.server.http_errors import install_error_handlers
from agentkit.server.logs import LogBuffer


@pytest.fixture
def docs_dir(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "index.md").write_text("# Welcome\n\nSee [the API](http-api.md#start).\n")
    (root / "http-api.md").write_text("# HTTP API\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    return root


@pytest.fixture
def docs_client(docs_dir: Path) -> httpx.AsyncClient:
    app = FastAPI(docs_url=None, redoc_url=None)
    install_error_handlers(app)
    app.include_router(docs_router(docs_dir))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_docs_index_renders_the_index_page_with_rewritten_links(
    docs_client: httpx.AsyncClient,
) -> None:
    async with docs_client as c:
        r = await c.get("/docs")
    assert r.status_code == 200
    assert "<h1>Welcome</h1>" in r.text
    assert 'href="/docs/http-api#start"' in r.text
    assert ">HTTP API</a>" in r.text  # navigation lists every page by title


async def test_docs_pages_render_markdown_tables(docs_client: httpx.AsyncClient) -> None:
    async with docs_client as c:
        r = await c.get("/docs/http-api")
    assert "<table>" in r.text


async def test_md_suffixed_page_links_redirect(docs_client: httpx.AsyncClient) -> None:
    async with docs_client as c:
        r = await c.get("/docs/http-api.md")
    assert r.status_code == 308
    assert r.headers["location"] == "/docs/http-api"


@pytest.mark.parametrize("page", ["missing", "..%2Fsecret", ".hidden", "a.b"])
async def test_unknown_or_unsafe_pages_are_json_404(
    docs_client: httpx.AsyncClient, page: str
) -> None:
    async with docs_client as c:
        r = await c.get(f"/docs/{page}")
    assert r.status_code == 404
    assert r.json()["ok"] is False


def test_the_packaged_docs_match_the_repository(repo_root: Path) -> None:
    source = sorted((repo_root / "docs").glob("*.md"))
    packaged = docs_site.PACKAGED
    copied = {p.name: p.read_bytes() for p in packaged.glob("*.md")}
    expected = {p.name: p.read_bytes() for p in source}
    assert copied == expected, "the docs the package serves are not the repository's docs/"


def test_log_buffer_serves_lines_after_a_cursor() -> None:
    buffer = LogBuffer(capacity=3)
    logger = logging.getLogger("agentkit.test.logbuffer")
    buffer.attach(logger.name)
    try:
        for i in range(5):
            logger.info("line %d", i)
    finally:
        buffer.detach(logger.name)
    kept = buffer.after(0)
    assert [e.message for e in kept] == ["line 2", "line 3", "line 4"]  # oldest dropped
    assert [e.message for e in buffer.after(kept[1].seq)] == ["line 4"]
    assert buffer.after(buffer.last_seq) == []
