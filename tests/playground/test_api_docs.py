"""`/v1/api-docs` in a browser with every request off this machine refused: Swagger UI
still renders the API (its files come from this server) and breaks none of the page's CSP."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.fixtures.http_server import SLUG, Served
from tests.playground.conftest import Shot

pytestmark = pytest.mark.slow(reason="renders Swagger UI in Chromium")

LOOPBACK = {"127.0.0.1", "localhost", "[::1]", "::1"}


def test_the_api_explorer_renders_offline_under_its_csp(
    shared_server: Served, page_factory: Any, shot: Shot
) -> None:
    page = page_factory()
    left_the_machine: list[str] = []
    loaded: list[str] = []
    console_errors: list[str] = []

    def only_loopback(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).hostname in LOOPBACK:
            loaded.append(url)
            route.continue_()
        else:
            left_the_machine.append(url)
            route.abort()

    page.route("**/*", only_loopback)
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.goto(shared_server.root_url + "/v1/api-docs")
    # Rendered from the schema: the title, and the session route among the operations.
    page.locator(".information-container .title").get_by_text("agentkit").wait_for()
    start = page.locator(".opblock-summary-path", has_text=f"/{SLUG}/v1/session").first
    start.wait_for()
    assert start.is_visible()
    assert page.locator(".opblock").count() > 10
    assert left_the_machine == []
    # A CSP violation or a failed load is reported on the console as an error.
    assert console_errors == []
    assert any(u.endswith("/v1/api-docs/assets/swagger-ui-bundle.js") for u in loaded)
    assert any(u.endswith("/v1/openapi.json") for u in loaded)
    shot(page, "api-docs")
