"""The Evals tab's history on a seeded project: three stored runs of four cases (one that
always passes, one that always fails, one that fails in the second run only, one flaky),
and a committed baseline the newest run differs from. Checked in Chromium: the pass-rate
and duration charts with their text alternatives, the per-case grid, the highlighted
differences from the baseline, at 390 px too."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.evals.conftest import case, write_project
from tests.fixtures.http_server import SLUG, Served, _env
from tests.playground.test_accessibility import AUDIT

pytestmark = pytest.mark.slow(reason="drives the playground in Chromium")

# An assertion counting its calls in a file: which call passes is decided by the count.
COUNTED = """
    import os
    from pathlib import Path

    from agentkit.evals import *  # noqa: F403


    def nth_call(name, passes):
        def check(t):
            path = Path(os.environ["EVAL_COUNTS"]) / name
            n = int(path.read_text()) + 1 if path.exists() else 1
            path.write_text(str(n))
            return n in passes or f"call {{n}} fails"

        return check


    case = define_eval(message="hi there", {args})
"""
EVALS = {
    "steady.eval.py": case('define_eval(message="hi")'),
    "broken.eval.py": case(
        'define_eval(message="Weather in Rome?", assertions=[reply_contains("a zebra")])'
    ),
    "drift.eval.py": COUNTED.format(args='assertions=[nth_call("drift", {1, 3})]'),
    "wobbly.eval.py": COUNTED.format(args='trials=2, assertions=[nth_call("wobbly", {1, 3, 5})]'),
}
BASELINE = {
    "version": 1,
    "cases": {
        "broken": {"status": "passed", "passRate": 1.0},
        "drift": {"status": "failed", "passRate": 0.0},
        "steady": {"status": "passed", "passRate": 1.0},
        "wobbly": {"status": "flaky", "passRate": 0.5},
    },
}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("evalhistory")
    project = write_project(base / SLUG, EVALS)
    (project / "evals" / "baseline.json").write_text(json.dumps(BASELINE))
    counts = base / "counts"
    counts.mkdir()
    served = Served(project, base / "state", [], _env({"EVAL_COUNTS": str(counts)})).start()
    with httpx.Client(timeout=30) as c:
        for _ in range(3):
            r = c.post(f"{served.url}/v1/dev/evals/runs", json={})
            assert r.status_code == 202, r.text
            run_id = r.json()["runId"]
            deadline = time.monotonic() + 120
            while c.get(f"{served.url}/v1/dev/evals/runs/{run_id}").json()["status"] == "running":
                assert time.monotonic() < deadline, "eval run did not finish"
                time.sleep(0.05)
    yield served
    served.stop()
    assert "Traceback" not in served.output(), served.output()


def open_evals(page: Any, served: Served) -> Any:
    page.goto(f"{served.url}/playground")
    page.locator("body[data-ready]").wait_for(state="attached")
    page.get_by_role("tab", name="Evals").click()
    page.locator("#evals .eval-history").wait_for()
    return page.locator("#evals .eval-history")


def test_history_charts_grid_and_baseline_diff(
    seeded: Served, page_factory: Any, tmp_path: Path
) -> None:
    runs = httpx.get(f"{seeded.url}/v1/dev/evals/runs", timeout=30).json()["runs"]
    outcome = {c["id"]: c["status"] for c in runs[0]["cases"]}  # newest first
    assert outcome == {"broken": "failed", "drift": "passed", "steady": "passed", "wobbly": "flaky"}
    listing = httpx.get(f"{seeded.url}/v1/dev/evals", timeout=30).json()
    assert listing["baseline"] == BASELINE["cases"]

    page = page_factory()
    history = open_evals(page, seeded)
    assert history.get_by_role("heading", name="History (3 runs)").is_visible()
    rate = history.locator("figure.chart-pass-rate svg[role=img]")
    label = rate.get_attribute("aria-label") or ""
    # Run 1: steady, drift pass (2 of 4); run 2: steady only; run 3: steady, drift.
    assert "from 50% to 50%" in label and "lowest 25%" in label, label
    assert rate.locator("rect.chart-hit > title").count() == 3
    assert rate.locator("path.chart-line").count() == 1
    duration = history.locator("figure.chart-duration svg[role=img]")
    assert "Run duration over the last 3 runs" in (duration.get_attribute("aria-label") or "")
    for fig in history.locator("figure.chart").all():
        assert fig.locator("details.chart-data table tr").count() == 4  # header + 3 runs

    grid = history.locator("table.eval-grid")
    drift = grid.locator('tr[data-case="drift"]')
    assert [c.inner_text() for c in drift.locator("td.case-cell").all()] == [
        "✓ passed",
        "✗ failed",
        "✓ passed",
        "✗ failed",  # the baseline
    ]
    wobbly = grid.locator('tr[data-case="wobbly"] td.case-cell').first
    assert wobbly.inner_text() == "≈ flaky"
    # Differences of the newest run from the baseline are marked, worse and better.
    assert grid.locator('tr[data-case="broken"].changed.worse td.diff').count() == 2
    assert "worse: passed → failed" in grid.locator('tr[data-case="broken"]').inner_text()
    assert grid.locator('tr[data-case="drift"].changed.better').count() == 1
    assert grid.locator('tr[data-case="steady"].changed').count() == 0
    assert "2 cases differ from the baseline" in history.inner_text()
    # History sits above the run list.
    order = page.evaluate(
        """() => {
          const h = document.querySelector("#evals .eval-history");
          const heads = [...document.querySelectorAll("#evals h2")];
          const runs = heads.find((n) => n.textContent === "Runs");
          return Boolean(h.compareDocumentPosition(runs) & Node.DOCUMENT_POSITION_FOLLOWING);
        }"""
    )
    assert order
    shot = tmp_path / "eval-history.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_history_fits_a_phone_and_reads_in_both_schemes(
    seeded: Served, page_factory: Any, tmp_path: Path, scheme: str
) -> None:
    page = page_factory(width=390, height=844, color_scheme=scheme)
    history = open_evals(page, seeded)
    for fig in history.locator("figure.chart").all():
        box = fig.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    result = page.evaluate(AUDIT)
    assert result["unnamed"] == [] and result["low"] == [], result
    # (The panel scrolls inside the page: each part is shot scrolled into view.)
    history.locator("figure.chart").first.screenshot(path=str(tmp_path / f"rate-390-{scheme}.png"))
    history.locator("table.eval-grid").screenshot(path=str(tmp_path / f"grid-390-{scheme}.png"))
