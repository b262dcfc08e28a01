"""The playground's one formatter (`format.js`) run under Node, without a browser: the same
cases as the Chromium test, so a broken formatter fails even where no Chromium is."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.format_cases import CASES, METRIC_CASES

FORMAT_JS = Path(__file__).resolve().parents[2] / "src/agentkit/server/static/playground/format.js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="no node on PATH")


def cases() -> list[tuple[str, list[Any], str]]:
    plain = [(name, [value], want) for name, value, want in CASES]
    metric = [("formatMetric", [m, v], want) for m, v, want in METRIC_CASES]
    return plain + metric


def test_format_js_under_node() -> None:
    table = cases()
    assert len(table) > 30
    script = (
        f"const f = await import({json.dumps(FORMAT_JS.as_uri())});\n"
        "const cases = JSON.parse(process.argv[1]);\n"
        "console.log(JSON.stringify(cases.map(([name, args]) => f[name](...args))));\n"
    )
    assert NODE is not None
    out = subprocess.run(
        [NODE, "--input-type=module", "-e", script, json.dumps([[n, a] for n, a, _ in table])],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    got = json.loads(out.stdout)
    assert list(zip([(n, a) for n, a, _ in table], got, strict=True)) == [
        ((n, a), want) for n, a, want in table
    ]
