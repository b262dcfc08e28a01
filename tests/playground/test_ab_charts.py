"""The A/Bs tab's charts on a seeded project: an experiment whose "long" arm sends far more
input tokens, with enough sessions for the band to exclude zero and a guardrail that pauses
the arm. Checked in Chromium: the SVG shapes, their text alternatives, exact values on
hover, the tables below, a phone-wide viewport, and contrast in light and dark."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fixtures.http_server import AGENT_FILES, SLUG, Served, _env, write_agent
from tests.playground.test_accessibility import AUDIT
from tests.server.helpers import read_stream, turn_ends

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")

LONG = "Consider every detail of the question carefully before answering. " * 600
FILES = {
    **AGENT_FILES,
    "agent/ab.py": f"""
        from agentkit import define_ab, variant

        ab = define_ab(
            name="prompt",
            description="Does a long prompt change the answers?",
            variants={{"short": variant(), "long": variant(instructions={LONG!r})}},
            control="short",
            guardrails={{"inputTokens": 8000}},
            min_samples=5,
        )
    """,
}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with 16 enrolled sessions of 5 turns each, messages of random lengths."""
    base = tmp_path_factory.mktemp("abcharts")
    served = Served(write_agent(base / SLUG, FILES), base / "state", [], _env(None)).start()
    rng = random.Random(41)
    words = ["how", "is", "the", "weather", "in", "town", "today"]
    tokens: dict[str, str] = {}
    with httpx.Client(timeout=30) as c:

        def message() -> str:
            return " ".join(rng.choice(words) for _ in range(rng.randint(5, 400)))

        for _ in range(16):
            r = c.post(f"{served.url}/v1/session", json={"message": message()})
            assert r.status_code == 200, r.text
            sid, token = r.json()["sessionId"], r.json()["continuationToken"]
            tokens[sid] = token
            read_stream(c, served.url, sid, until=turn_ends())
        for turn in range(2, 6):
            for sid, token in tokens.items():
                r = c.post(
                    f"{served.url}/v1/session/{sid}",
                    json={"message": message(), "continuationToken": token},
                )
                assert r.status_code == 200, r.text
                tokens[sid] = r.json().get("continuationToken", token)
                read_stream(c, served.url, sid, until=turn_ends(turn))
    yield served
    served.stop()
    assert "Traceback" not in served.output(), served.output()


# Contrast of the charts' SVG text (fill) and marks (stroke) against the chart's background.
SVG_CONTRAST = """() => {
  const rgb = (c) => c.match(/\\d+(\\.\\d+)?/g).slice(0, 3).map(Number);
  const lum = (c) => {
    const [r, g, b] = rgb(c).map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const out = [];
  for (const fig of document.querySelectorAll("#abs figure.chart")) {
    const bg = getComputedStyle(fig).backgroundColor;
    for (const t of fig.querySelectorAll("svg text")) {
      const got = ratio(getComputedStyle(t).fill, bg);
      const what = `${t.getAttribute("class")} "${t.textContent}"`;
      if (got < 4.5) out.push(`text ${what} ${got.toFixed(2)}`);
    }
    const marks = [".chart-line", ".chart-zero line", ".chart-limit line", ".chart-pause line",
      ".chart-axis"].join(", ");
    for (const m of fig.querySelectorAll(marks)) {
      const got = ratio(getComputedStyle(m).stroke, bg);
      const what = m.getAttribute("class") || m.parentNode.getAttribute("class");
      if (got < 3) out.push(`mark ${what} ${got.toFixed(2)}`);
    }
  }
  return out;
}"""


def open_abs(page: Any, served: Served) -> Any:
    page.goto(f"{served.url}/playground")
    page.locator("body[data-ready]").wait_for(state="attached")
    page.get_by_role("tab", name="A/Bs").click()
    page.locator("#abs figure.chart").first.wait_for()
    return page.locator("#abs")


def test_the_band_excludes_zero_and_every_chart_has_a_text_alternative(
    seeded: Served, page_factory: Any, tmp_path: Path
) -> None:
    page = page_factory()
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security" in m.text else 0)
    abs_tab = open_abs(page, seeded)
    readout = httpx.get(f"{seeded.url}/v1/abs", timeout=30).json()["experiments"][0]
    timeline = httpx.get(f"{seeded.url}/v1/abs/timeline", timeout=30).json()["experiments"][0]
    assert readout["comparisons"]["long"]["inputTokens"]["status"] == "higher"
    assert [p["variant"] for p in timeline["pauses"]] == ["long"]

    # Every chart is an <svg role="img"> with a summary, and a table of its points.
    figures = abs_tab.locator("figure.chart")
    assert figures.count() >= 4
    for i in range(figures.count()):
        fig = figures.nth(i)
        label = fig.locator("svg[role=img]").get_attribute("aria-label") or ""
        assert len(label) > 30, label
        assert fig.locator("figcaption").inner_text()
        assert fig.locator("details.chart-data table tr").count() >= 2

    # The comparison that matters: estimate, band, zero and the pause marked; its summary
    # says the band is above zero, and its last point's title is the readout in the table.
    chart = abs_tab.locator('figure[data-arm="long"][data-metric="inputTokens"]').first
    svg = chart.locator("svg")
    assert svg.locator("path.chart-band").count() == 1
    assert svg.locator("path.chart-line").count() == 1
    assert svg.locator("g.chart-zero line").count() == 1
    assert svg.locator("g.chart-pause").count() == 1
    points = timeline["comparisons"]["long"]["inputTokens"]
    assert svg.locator("rect.chart-hit > title").count() == len(points)
    summary = svg.get_attribute("aria-label") or ""
    assert "long minus short" in summary and "band is above zero" in summary, summary
    last_title = svg.locator("rect.chart-hit > title").last.text_content() or ""
    row = abs_tab.locator("tr", has=page.locator("td", has_text="inputTokens")).first
    difference = row.locator("td").nth(3).inner_text()  # "+12,345 [11,000, 13,000]"
    assert difference.startswith("+")
    assert difference.lstrip("+") in last_title, (difference, last_title)
    svg.locator("rect.chart-hit").last.hover()

    # The guardrail's limit and the pause; the sessions per arm, one line each.
    guard = abs_tab.locator("figure.chart-guardrail").first
    assert guard.locator("g.chart-limit line").count() == 1
    assert guard.locator("g.chart-pause").count() == 1
    assert "surely over the limit" in (guard.locator("svg").get_attribute("aria-label") or "")
    samples = abs_tab.locator("figure.chart-samples")
    assert samples.locator("g.chart-series").count() == 2
    assert "short" in (samples.locator("svg").get_attribute("aria-label") or "")

    # The tables stay below the charts.
    below = page.evaluate(
        """() => {
          const box = document.querySelector("#abs section[data-experiment]");
          const charts = box.querySelector(".charts");
          const table = box.querySelector(".table-wrap");
          return Boolean(charts.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING);
        }"""
    )
    assert below
    shot = tmp_path / "abs-charts.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert violations == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_charts_fit_a_phone_and_read_in_both_schemes(
    seeded: Served, page_factory: Any, tmp_path: Path, scheme: str
) -> None:
    page = page_factory(width=390, height=844, color_scheme=scheme)
    abs_tab = open_abs(page, seeded)
    widths = page.evaluate(
        """() => [...document.querySelectorAll("#abs figure.chart")].map((f) => {
          const r = f.getBoundingClientRect();
          return [r.left, r.right];
        })"""
    )
    assert widths and all(left >= 0 and right <= 390 for left, right in widths), widths
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    # Tick labels keep a readable size: the SVG is drawn to the tab's width, not shrunk.
    tick = abs_tab.locator("svg text.chart-tick").first
    box = tick.bounding_box()
    assert box is not None and box["height"] >= 10, box
    assert page.evaluate(SVG_CONTRAST) == []
    # The page's own audit: the tab's text (legends, summaries, tables) and its controls.
    for fold in abs_tab.locator("details.chart-data > summary").all()[:2]:
        fold.click()
    result = page.evaluate(AUDIT)
    assert result["unnamed"] == [] and result["low"] == [], result
    shot = tmp_path / f"abs-charts-390-{scheme}.png"
    abs_tab.locator("figure.chart").first.screenshot(path=str(shot))
    assert shot.stat().st_size > 2_000
