"""The documentation pages and the API docs cannot be framed or sniffed (clickjacking)."""

from __future__ import annotations

import httpx
import pytest

from tests.fixtures.http_server import Served


@pytest.mark.parametrize("path", ["/docs", "/docs/auth", "/v1/api-docs"])
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
