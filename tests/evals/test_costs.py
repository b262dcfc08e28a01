"""A case's cost: the turns' `costUsd` summed, in the table, the JSON, JUnit and run snapshots.

The scripted model reports known usage (1000 input, 100 output tokens per step) and a
price file prices it at $2 / $10 per million tokens: $0.003 per step. Without a price the
cost is unknown (`None`, `-`), never a false zero.
"""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agentkit.cli.eval import print_table
from agentkit.costs import PRICES_FILE_ENV
from agentkit.evals.junit import junit_xml
from agentkit.evals.runner import EvalRunner, RunResult, select
from agentkit.evals.runs import EvalRunService
from agentkit.events import Usage
from agentkit.models.scripted import ScriptedModel, Step
from agentkit.project.bundle import AgentBundle
from tests.evals.conftest import case, write_project

EVALS = {
    "one.eval.py": case('define_eval(message="hi", assertions=[reply_contains("heads")])'),
    "two.eval.py": case(
        'define_eval(message="hi", trials=2, assertions=[reply_contains("heads")])'
    ),
}
STEP_USAGE = Usage(input_tokens=1000, output_tokens=100)


def runner(root: Path) -> EvalRunner:
    return EvalRunner(
        AgentBundle.discover(root),
        model_resolver=lambda _id: ScriptedModel(
            [Step.text("heads", usage=STEP_USAGE)], model_id="priced-model"
        ),
    )


async def run(root: Path) -> RunResult:
    r = runner(root)
    return await r.run(select(r.bundle.manifest.evals))


@pytest.fixture
def priced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"priced-model": {"input": 2.0, "output": 10.0}}))
    monkeypatch.setenv(PRICES_FILE_ENV, str(prices))


@pytest.mark.usefixtures("priced")
async def test_known_prices_give_each_case_its_cost(tmp_path: Path) -> None:
    result = await run(write_project(tmp_path, EVALS))
    by_id = {c.id: c for c in result.cases}
    assert by_id["one"].cost == pytest.approx(0.003)
    assert by_id["two"].cost == pytest.approx(0.006)  # two trials
    as_json = result.to_dict()["cases"]
    assert [c["cost"] for c in as_json] == [pytest.approx(0.003), pytest.approx(0.006)]
    assert [t["cost"] for t in as_json[1]["trials"]] == [pytest.approx(0.003)] * 2

    out = io.StringIO()
    print_table(result.cases, out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:5] == ["case", "status", "duration", "tokens", "cost"]
    assert "$0.0030" in lines[1] and "$0.0060" in lines[2]

    doc = ET.fromstring(junit_xml(result))
    props = {
        tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
        for tc in doc.iter("testcase")
    }
    assert props["one"]["costUsd"] == "0.003000"
    assert props["two"]["costUsd"] == "0.006000"


async def test_unknown_price_is_null_not_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PRICES_FILE_ENV, raising=False)
    result = await run(write_project(tmp_path, EVALS))
    assert [c.cost for c in result.cases] == [None, None]
    assert [c["cost"] for c in result.to_dict()["cases"]] == [None, None]
    out = io.StringIO()
    print_table(result.cases, out)
    assert "$" not in out.getvalue()
    doc = ET.fromstring(junit_xml(result))
    assert all(p.get("name") != "costUsd" for p in doc.iter("property"))


@pytest.mark.usefixtures("priced")
async def test_run_snapshots_carry_the_cost(tmp_path: Path) -> None:
    root = write_project(tmp_path, EVALS)
    service = EvalRunService(AgentBundle.discover(root), runner_factory=lambda _b: runner(root))
    started = await service.start()
    await service.wait()
    snap = await service.get(started["runId"])
    assert snap["status"] == "completed"
    assert {c["id"]: c["cost"] for c in snap["cases"]} == {
        "one": pytest.approx(0.003),
        "two": pytest.approx(0.006),
    }
