"""Numbers for people: the page's one formatter, run in Chromium as the page loads it, and
the A/Bs tab printing its means through it (no `1971.3000`)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.fixtures.format_cases import CASES, METRIC_CASES
from tests.fixtures.http_server import Served, ServeFactory
from tests.playground.test_example_agent import open_page, pr_review  # noqa: F401
from tests.playground.test_playground import open_playground

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")


def test_the_formatter_writes_numbers_for_people(serve: ServeFactory, page_factory: Any) -> None:
    page = page_factory()
    open_playground(page, serve("--dev").url)
    got = page.evaluate(
        """async (cases) => {
          const f = await import(new URL("assets/format.js", location.href + "/").href);
          return cases.map(([name, input]) => f[name](input));
        }""",
        [[name, value] for name, value, _ in CASES],
    )
    assert list(zip([(n, v) for n, v, _ in CASES], got, strict=True)) == [
        ((n, v), want) for n, v, want in CASES
    ]
    # A metric's mean in its own unit: the A/Bs tab's tables and charts print these.
    got = page.evaluate(
        """async (cases) => {
          const f = await import(new URL("assets/format.js", location.href + "/").href);
          return cases.map(([metric, input]) => f.formatMetric(metric, input));
        }""",
        [[m, v] for m, v, _ in METRIC_CASES],
    )
    assert got == [want for _, _, want in METRIC_CASES]


def test_the_abs_tab_prints_no_four_decimal_means(
    pr_review: Served,  # noqa: F811
    page_factory: Any,
) -> None:
    page = page_factory()

    def fractional_means(route: Any) -> None:
        # The test model's means are whole numbers; give the real report the fractional
        # means a real model produces (the issue's `1971.3000` and `0.9000`).
        report = route.fetch().json()
        for x in report.get("experiments", []):
            for totals in x.get("arms", {}).values():
                totals.setdefault("means", {}).update(inputTokens=1971.3, completed=0.9)
        route.fulfill(json=report)

    page.route("**/v1/abs", fractional_means)
    open_page(page, pr_review)
    for text in ("Please review PR 12", "And PR 13, briefly"):
        page.get_by_label("Message").fill(text)
        page.get_by_label("Message").press("Enter")
        page.locator(".turn-foot").last.wait_for()
    page.get_by_role("tab", name="A/Bs").click()
    page.locator("#abs").get_by_role("heading", name="review-style").wait_for()
    text = page.locator("#abs").inner_text()
    # A mean count reads as a count; the share of turns completed as a percentage.
    assert "1,971" in text and "90%" in text
    assert not re.search(r"\d\.\d{4}\b", text), text
