"""JUnit XML (parsed back) and baseline comparison over a real run."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from pathlib import Path

from agentkit.evals.baseline import compare, load_baseline, save_baseline
from agentkit.evals.junit import junit_xml
from agentkit.evals.runner import EvalRunner, RunResult, select
from agentkit.models.scripted import ScriptedModel, Step
from agentkit.project.bundle import AgentBundle
from tests.evals.conftest import case, write_project

EVALS = {
    "good.eval.py": case('define_eval(message="say heads", assertions=[reply_contains("s")])'),
    "group/bad.eval.py": case('define_eval(message="x", assertions=[reply_contains("zebra")])'),
    "boom.eval.py": case('define_eval(message="x", assertions=[lambda t: {}["missing"]])'),
    "coin.eval.py": case(
        'define_eval(message="flip", trials=2, assertions=[reply_contains("heads")])'
    ),
}


async def run(root: Path) -> RunResult:
    flips = itertools.cycle(["heads", "tails"])
    runner = EvalRunner(
        AgentBundle.discover(root),
        model_resolver=lambda _id: ScriptedModel([Step.text(next(flips))] * 2),
    )
    return await runner.run(select(runner.bundle.manifest.evals))


async def test_junit_xml_parses_and_marks_failures_errors_and_flaky(tmp_path: Path) -> None:
    root = write_project(tmp_path, EVALS, config="max_concurrency=1")
    result = await run(root)
    statuses = {c.id: c.status for c in result.cases}
    assert statuses == {"boom": "error", "coin": "flaky", "good": "passed", "group/bad": "failed"}
    doc = ET.fromstring(junit_xml(result))
    suite = doc.find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "4" and suite.get("failures") == "1" and suite.get("errors") == "1"
    cases = {(tc.get("classname"), tc.get("name")): tc for tc in suite.iter("testcase")}
    assert set(cases) == {
        ("evals", "good"),
        ("evals.group", "bad"),
        ("evals", "boom"),
        ("evals", "coin"),
    }
    bad = cases[("evals.group", "bad")].find("failure")
    assert bad is not None and "zebra" in (bad.get("message") or "")
    err = cases[("evals", "boom")].find("error")
    assert err is not None and "KeyError" in (err.text or "")
    coin = cases[("evals", "coin")]
    props = {p.get("name"): p.get("value") for p in coin.iter("property")}
    assert props["status"] == "flaky" and props["passRate"] == "0.500"
    assert props["flaky"].startswith("0.500 [")
    assert coin.find("failure") is None  # flaky does not fail unless the config says so
    good = cases[("evals", "good")]
    assert good.find("failure") is None and good.find("error") is None
    assert float(good.get("time") or "-1") >= 0


async def test_a_baseline_lists_the_cases_that_got_worse_first(tmp_path: Path) -> None:
    root = write_project(tmp_path, EVALS, config="max_concurrency=1")
    result = await run(root)
    path = tmp_path / "baseline.json"
    save_baseline(result, path)
    assert compare(result, load_baseline(path)) == []

    # Yesterday everything passed, and a case existed that is gone now.
    baseline = load_baseline(path)
    for entry in baseline.values():
        entry.update(status="passed", passRate=1.0)
    baseline["retired"] = {"status": "passed", "passRate": 1.0}
    del baseline["good"]
    changes = compare(result, baseline)
    assert [(c.kind, c.id) for c in changes] == [
        ("worse", "boom"),
        ("worse", "coin"),
        ("worse", "group/bad"),
        ("new", "good"),
        ("missing", "retired"),
    ]
    assert changes[0].describe().startswith("worse")
