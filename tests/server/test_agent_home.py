"""The agent's root URL and the start-up banner: no dead first links. `GET /<slug>/` (and
`/` in single mode) opens the playground, or names the agent and its URLs (a page, or
JSON on request); the banner's URLs open and its curl works as printed."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.fixtures.http_server import SLUG, Served, ServeFactory, serve_in

JSON = {"accept": "application/json"}


def banner(served: Served) -> list[str]:
    return [line for line in served.output().splitlines() if line.startswith(("agentkit:", "  "))]


def test_slug_root_opens_the_playground(shared_server: Served) -> None:
    for path in (f"/{SLUG}/", f"/{SLUG}"):
        r = httpx.get(shared_server.root_url + path)
        assert r.status_code == 307, r.text
        assert r.headers["location"] == f"{shared_server.url}/playground"
    page = httpx.get(shared_server.url + "/", follow_redirects=True)
    assert page.status_code == 200 and 'type="module"' in page.text


def test_slug_root_as_json_names_the_agent_and_urls_that_answer(shared_server: Served) -> None:
    body = httpx.get(shared_server.url + "/", headers=JSON).json()
    assert body["ok"] is True and body["slug"] == SLUG and body["name"] == SLUG
    urls = body["urls"]
    assert urls["playground"] == f"{shared_server.url}/playground"
    for name in ("playground", "docs", "info", "health", "apiDocs"):
        assert httpx.get(urls[name]).status_code == 200, name


def test_without_the_playground_the_root_is_a_page_of_links(tmp_path: Path) -> None:
    served = serve_in(tmp_path, "--no-playground")
    try:
        page = httpx.get(served.url + "/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert f"{served.url}/v1/info" in page.text and "/playground" not in page.text
        body = httpx.get(served.url + "/", headers=JSON).json()
        assert "playground" not in body["urls"]
        assert httpx.get(served.url + "/playground").status_code == 404
        assert httpx.get(served.url + "/playground/assets/app.js").status_code == 404
        assert not any("playground" in line for line in banner(served))
    finally:
        served.stop()


def test_single_mode_root_and_banner_curl_works_as_printed(serve: ServeFactory) -> None:
    served = serve("--mode", "single")
    r = httpx.get(served.root_url + "/")
    assert r.status_code == 307 and r.headers["location"] == f"{served.root_url}/playground"
    assert httpx.get(served.root_url + "/", headers=JSON).json()["basePath"] == ""

    lines = banner(served)
    assert f"  playground  {served.root_url}/playground" in lines
    assert f"  docs        {served.root_url}/docs" in lines
    [curl] = [line.split("try", 1)[1].strip() for line in lines if line.startswith("  try ")]
    out = subprocess.run(shlex.split(curl), capture_output=True, text=True, timeout=30, check=True)
    assert re.search(r'"sessionId":"ses_', out.stdout), out.stdout


def test_banner_in_multi_mode_names_each_agent(shared_server: Served) -> None:
    lines = banner(shared_server)
    assert f"agentkit: serving {SLUG} at {shared_server.url}/" in lines
    assert f"  playground  {shared_server.url}/playground" in lines
    for line in lines:
        url = line.split()[-1]
        if url.startswith("http"):
            assert httpx.get(url, follow_redirects=True).status_code == 200, line


def test_playground_assets_are_only_the_shipped_files(shared_server: Served) -> None:
    assets = f"{shared_server.url}/playground/assets"
    js = httpx.get(f"{assets}/app.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    for name in ("..%2Fplayground.py", "index.html", "nope.js", ".hidden.js", "app.js.map"):
        r = httpx.get(f"{assets}/{name}")
        assert r.status_code == 404, name
        assert r.json()["ok"] is False
    page = httpx.get(f"{shared_server.url}/playground")
    assert "script-src 'self'" in page.headers["content-security-policy"]


@pytest.mark.parametrize("bad", ["/helpdesk/playground/assets/", "/helpdesk/playground/x"])
def test_unknown_playground_paths_are_json_404s(shared_server: Served, bad: str) -> None:
    r = httpx.get(shared_server.root_url + bad)
    assert r.status_code == 404 and r.json()["ok"] is False
