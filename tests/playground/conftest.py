"""Browser fixtures: Playwright driving the system's Chromium (headless) against a real
`agentkit serve`. Screenshots of each state land in `.artifacts/playground/` (gitignored).

Playwright's own browser download is never used: the tests launch the `chromium` found on
PATH (`apt-get install chromium` on Debian; `.ci/run` installs it when missing)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / ".artifacts" / "playground"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

playwright_api = pytest.importorskip("playwright.sync_api")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (apt-get install chromium)", allow_module_level=True)


# Per module, not per session: while Playwright's sync API is open, the main thread counts
# as running an event loop, which tests after these (asyncio ones, Mangum) cannot share.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


Shot = Callable[[Any, str], Path]


@pytest.fixture
def shot() -> Shot:
    """Save a screenshot of `page` as `<name>.png` among the test artifacts."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(page: Any, name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path))
        return path

    return take


@pytest.fixture
def page_factory(browser: Any) -> Iterator[Callable[..., Any]]:
    """New pages, each in a fresh context (its own session storage). Any uncaught script
    error on a page fails the test."""
    contexts: list[Any] = []
    errors: list[str] = []

    def make(width: int = 1200, height: int = 800, **options: Any) -> Any:
        context = browser.new_context(viewport={"width": width, "height": height}, **options)
        context.set_default_timeout(30_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        return page

    yield make
    for context in contexts:
        context.close()
    assert not errors, errors
