"""The documentation pages and the API docs cannot be framed or sniffed (clickjacking)."""

from __future__ import annotations

import httpx
import pytest

from tests.fixtures.http_server import Served


@pytest.mark.parametrize("path", ["/docs", "/docs/auth", "/docs/search?q=auth", "/v1/api-docs"])
def test_docs_pages_carry_the_security_headers(shared_server: Served, path: str) -> None:
    r = httpx.get(shared_server.root_url + path, timeout=30)
    assert r.status_code == 200, r.text
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["x-content-type-options"] == "nosniff"


def test_docs_pages_run_no_script(shared_server: Served) -> None:
    r = httpx.get(shared_server.root_url + "/docs/auth", timeout=30)
    assert "script-src" not in r.headers["content-security-policy"]
    assert r.headers["content-security-policy"].startswith("default-src 'none'")


def test_the_api_explorer_loads_nothing_from_another_origin(shared_server: Served) -> None:
    r = httpx.get(shared_server.root_url + "/v1/api-docs", timeout=30)
    csp = r.headers["content-security-policy"]
    assert csp.startswith("default-src 'none'")
    assert "script-src 'self';" in csp and "connect-src 'self';" in csp
    assert "http" not in csp
    # Every script, stylesheet and icon the page names is one of this server's own paths.
    assert "http://" not in r.text and "https://" not in r.text and "//" not in r.text
    for asset, kind in (
        ("swagger-ui-bundle.js", "text/javascript"),
        ("swagger-ui.css", "text/css"),
        ("favicon.png", "image/png"),
        ("start.js", "text/javascript"),
    ):
        assert f'"/v1/api-docs/assets/{asset}"' in r.text
        got = httpx.get(f"{shared_server.root_url}/v1/api-docs/assets/{asset}", timeout=30)
        assert got.status_code == 200, asset
        assert got.headers["content-type"].startswith(kind), got.headers["content-type"]
        assert got.headers["x-content-type-options"] == "nosniff"


def test_the_api_explorer_serves_only_its_own_files(shared_server: Served) -> None:
    for name in ("index.html", "..%2F..%2Fpyproject.toml", "consts.py", "redoc.standalone.js"):
        r = httpx.get(f"{shared_server.root_url}/v1/api-docs/assets/{name}", timeout=30)
        assert r.status_code == 404, (name, r.status_code)
        assert r.json()["ok"] is False
