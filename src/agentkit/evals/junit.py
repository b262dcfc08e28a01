"""JUnit XML for CI systems: one `<testcase>` per eval case.

`failed` cases carry a `<failure>` (every failed assertion message), `error` cases an
`<error>`, and flaky ones a `flaky` property with their pass rate and interval (they fail
the suite only when the config says `flaky_fails`).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from agentkit.evals.runner import RunResult

__all__ = ["junit_xml", "write_junit"]


def junit_xml(result: RunResult, *, suite: str = "agentkit-evals") -> str:
    """The run as a JUnit XML document."""
    counts = result.counts()
    flaky_failing = result.flaky_fails
    failures = counts["failed"] + (counts["flaky"] if flaky_failing else 0)
    total_s = sum(c.duration_ms for c in result.cases) / 1000
    suites = ET.Element("testsuites")
    node = ET.SubElement(
        suites,
        "testsuite",
        name=suite,
        tests=str(len(result.cases)),
        failures=str(failures),
        errors=str(counts["error"]),
        skipped="0",
        time=f"{total_s:.3f}",
    )
    for case in result.cases:
        classname, _, name = case.id.rpartition("/")
        tc = ET.SubElement(
            node,
            "testcase",
            classname="evals" + ("." + classname.replace("/", ".") if classname else ""),
            name=name,
            time=f"{case.duration_ms / 1000:.3f}",
        )
        props = ET.SubElement(tc, "properties")
        ET.SubElement(props, "property", name="id", value=case.id)
        ET.SubElement(props, "property", name="status", value=case.status)
        if case.session_id:
            ET.SubElement(props, "property", name="sessionId", value=case.session_id)
        usage = case.usage
        ET.SubElement(
            props,
            "property",
            name="tokens",
            value=str(usage.get("inputTokens", 0) + usage.get("outputTokens", 0)),
        )
        if case.cost is not None:  # left out when a price was unknown
            ET.SubElement(props, "property", name="costUsd", value=f"{case.cost:.6f}")
        if len(case.trials) > 1:
            s = case.summary
            low, high = s.interval
            ET.SubElement(props, "property", name="trials", value=str(s.trials))
            ET.SubElement(props, "property", name="passRate", value=f"{s.rate:.3f}")
            if case.status == "flaky":
                ET.SubElement(
                    props, "property", name="flaky", value=f"{s.rate:.3f} [{low:.3f}, {high:.3f}]"
                )
        if case.status == "error":
            err = ET.SubElement(tc, "error", message=case.first_failure)
            err.text = case.error or ""
        elif case.status == "failed" or (case.status == "flaky" and flaky_failing):
            fail = ET.SubElement(tc, "failure", message=case.first_failure or case.status)
            fail.text = "\n".join(case.failures or [case.error or case.status])
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(result: RunResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(result), encoding="utf-8")
