"""Screenshots of every tab, in light and dark, at desktop width and at 390 px (kept among
the test artifacts). Each is taken once the tab has drawn, and no page may overflow its
width or raise a script error."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures.http_server import ServeFactory
from tests.playground.conftest import Shot
from tests.playground.test_playground import open_playground, send, session_id, wait_turns_done

pytestmark = pytest.mark.slow(reason="screenshots every tab in Chromium")

TABS = {
    "chat": "#transcript .turn-foot",
    "sessions": "#sessions-list .session-row",
    "surface": "#surface details.card",
    "logs": "#panel-logs .log, #panel-logs .empty-tab",
    "evals": "#evals > *",
    "abs": "#abs > *",
    "dev": "#dev > *",
}
NAMES = {"chat": "Chat", "sessions": "Sessions", "surface": "Surface", "logs": "Logs",
         "evals": "Evals", "abs": "A/Bs", "dev": "Dev"}  # fmt: skip


def test_every_tab_in_light_and_dark_on_desktop_and_phone(
    serve: ServeFactory, page_factory: Any, shot: Shot
) -> None:
    served = serve("--dev")
    first = page_factory()
    open_playground(first, served.url)
    send(first, "What is the weather in Paris?")
    wait_turns_done(first, 1)
    sid = session_id(first)
    for scheme in ("light", "dark"):
        for width, device in ((1280, "desktop"), (390, "phone")):
            phone = {"is_mobile": True, "has_touch": True} if width == 390 else {}
            page = page_factory(width=width, height=844, color_scheme=scheme, **phone)
            open_playground(page, served.url, f"?sessionId={sid}")
            page.locator(TABS["chat"]).wait_for()
            page.get_by_text("Timeline", exact=True).click()
            page.locator(".tl-row").first.wait_for()
            for tab, ready in TABS.items():
                page.get_by_role("tab", name=NAMES[tab]).click()
                page.locator(ready).first.wait_for()
                assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
                shot(page, f"tab-{tab}-{scheme}-{device}")
            page.goto(served.root_url + "/")
            page.locator(".agent-card").wait_for()
            shot(page, f"tab-home-{scheme}-{device}")
            page.goto(served.root_url + "/docs/getting-started")
            shot(page, f"tab-docs-{scheme}-{device}")
