"""Tabs with nothing in them explain themselves: what to add, an example, and a link to the
page of the docs that explains it (a link that answers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import ServeFactory
from tests.playground.conftest import Shot
from tests.playground.test_playground import open_playground

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")


def check_empty(page: Any, kind: str, words: str) -> None:
    box = page.locator(f".panel:not([hidden]) .empty-tab[data-empty={kind}]")
    box.wait_for()
    assert words in box.inner_text()
    href = box.get_by_role("link").get_attribute("href")
    assert href and href.endswith(f"/docs/{'ab' if kind == 'abs' else kind}")
    assert httpx.get(page.url.split("/helpdesk/")[0] + href).status_code == 200


def test_empty_evals_abs_schedules_and_logs_say_what_to_add(
    serve: ServeFactory, agent_project: Path, page_factory: Any, shot: Shot
) -> None:
    (agent_project / "agent" / "schedules" / "digest.md").unlink()
    served = serve("--dev")
    page = page_factory()
    open_playground(page, served.url)
    page.get_by_role("tab", name="Evals").click()
    check_empty(page, "evals", "evals/evals.config.py")
    shot(page, "empty-evals")
    page.get_by_role("tab", name="A/Bs").click()
    check_empty(page, "abs", "agent/ab.py")
    page.get_by_role("tab", name="Surface").click()
    check_empty(page, "schedules", "agent/schedules/")
    page.get_by_role("tab", name="Dev").click()
    check_empty(page, "schedules", "cron")
    lines = httpx.get(f"{served.url}/v1/logs").json()["lines"]
    page.get_by_role("tab", name="Logs").click()
    if lines:  # a server that has logged something shows it, not the explanation
        page.locator("#logs .log").first.wait_for()
        assert page.locator(".empty-tab[data-empty=logs]").count() == 0
    else:
        check_empty(page, "logs", "ctx.logger")
    assert "None." not in page.locator("main").inner_text()
