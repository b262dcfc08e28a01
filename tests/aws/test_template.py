"""template.yaml against the code it deploys: the store's key design, the stream filter,
least-privilege IAM, the layer's requirements, and the sample events."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentkit.store import _dynamo_schema as schema

ROOT = Path(__file__).resolve().parents[2]


class _CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation short-form tags (!Ref, !Sub, ...) as {"Fn": value}."""


def _tag(loader: _CfnLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {suffix: value}


_CfnLoader.add_multi_constructor("!", _tag)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return yaml.load((ROOT / "template.yaml").read_text(), Loader=_CfnLoader)


def resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def test_events_table_matches_the_store(template: dict[str, Any]) -> None:
    props = template["Resources"]["EventsTable"]["Properties"]
    assert props["KeySchema"] == schema.EVENTS_KEY_SCHEMA
    assert props["AttributeDefinitions"] == schema.EVENTS_ATTRIBUTE_DEFINITIONS
    assert props["StreamSpecification"]["StreamViewType"] == schema.EVENTS_STREAM_VIEW_TYPE
    assert props["TimeToLiveSpecification"]["AttributeName"] == schema.TTL_ATTRIBUTE


def test_sessions_table_matches_the_store(template: dict[str, Any]) -> None:
    props = template["Resources"]["SessionsTable"]["Properties"]
    assert props["KeySchema"] == schema.STATE_KEY_SCHEMA
    assert props["AttributeDefinitions"] == schema.STATE_ATTRIBUTE_DEFINITIONS
    assert props["GlobalSecondaryIndexes"] == schema.STATE_GLOBAL_SECONDARY_INDEXES
    assert props["TimeToLiveSpecification"]["AttributeName"] == schema.TTL_ATTRIBUTE


@pytest.mark.parametrize("table", ["SessionsTable", "EventsTable"])
def test_tables_are_on_demand_with_point_in_time_recovery(
    template: dict[str, Any], table: str
) -> None:
    props = template["Resources"][table]["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert template["Resources"][table]["DeletionPolicy"] == "Retain"


def test_hooks_read_only_inserted_events_with_partial_batch_failures(
    template: dict[str, Any],
) -> None:
    source = template["Resources"]["HooksFunction"]["Properties"]["Events"]["EventsStream"]
    props = source["Properties"]
    (flt,) = props["FilterCriteria"]["Filters"]
    assert json.loads(flt["Pattern"]) == json.loads(schema.EVENTS_STREAM_FILTER_PATTERN)
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BisectBatchOnFunctionError"] is True
    assert "OnFailure" in props["DestinationConfig"]


def test_turn_function_is_bounded_and_has_an_on_failure_destination(
    template: dict[str, Any],
) -> None:
    props = template["Resources"]["TurnFunction"]["Properties"]
    assert props["Timeout"] <= 900
    assert props["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]["Type"] == "Lambda"


def test_every_function_has_a_handler_module_and_tracing(template: dict[str, Any]) -> None:
    import importlib

    functions = resources(template, "AWS::Serverless::Function")
    assert set(functions) == {"ApiFunction", "TurnFunction", "HooksFunction", "SchedulerFunction"}
    assert template["Globals"]["Function"]["Tracing"] == "Active"
    for name, fn in functions.items():
        assert fn["Metadata"]["BuildMethod"] == "makefile"
        module, _, attr = fn["Properties"]["Handler"].rpartition(".")
        assert callable(getattr(importlib.import_module(module), attr)), name


def _statements(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, role in resources(template, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            for st in policy["PolicyDocument"]["Statement"]:
                if "If" in st:  # !If [Condition, statement, !Ref AWS::NoValue]
                    st = st["If"][1]
                found.append((name, st))
    return found


# Actions AWS offers no resource-level permissions for.
UNSCOPABLE = {"xray:PutTraceSegments", "xray:PutTelemetryRecords", "scheduler:ListSchedules"}


def test_no_wildcard_actions(template: dict[str, Any]) -> None:
    for role, st in _statements(template):
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        for action in actions:
            if isinstance(action, dict):  # an !If between two concrete actions
                action = json.dumps(action)
            assert "*" not in action, (role, action)


def test_resources_are_scoped(template: dict[str, Any]) -> None:
    for role, st in _statements(template):
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        if st["Resource"] == "*":
            assert set(actions) <= UNSCOPABLE, (role, actions)
            continue
        text = json.dumps(st["Resource"])
        # A wildcard only ever follows a stack-specific prefix or a table/index path.
        for match in re.finditer(r"[^\"]*\*[^\"]*", text):
            piece = match.group(0)
            assert (
                "${AWS::StackName}" in piece
                or "/index/*" in piece
                or "${BearerTokenName}-*" in piece
                or "foundation-model/*" in piece
                or "inference-profile/*" in piece
            ), (role, piece)


def test_layer_requirements_cover_the_runtime_dependencies() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = list(pyproject["project"]["dependencies"]) + list(
        pyproject["project"]["optional-dependencies"]["aws"]
    )
    lines = (ROOT / "layers" / "requirements.txt").read_text().splitlines()
    have = {re.split(r"[\[<>=!~ ]", x, maxsplit=1)[0].lower() for x in lines if x and x[0] != "#"}
    # Mangum serves the app; the runtime has boto3; the CLI's tables (rich) and --dev
    # reloading (watchfiles) are local only.
    served_elsewhere = {"uvicorn", "boto3", "rich", "watchfiles"}
    for req in wanted:
        name = re.split(r"[\[<>=!~ ]", req, maxsplit=1)[0].lower()
        assert name in have or name in served_elsewhere, name


def test_sample_events_are_valid_json_for_their_function() -> None:
    for path in sorted((ROOT / "events").rglob("*.json")):
        data = json.loads(path.read_text())
        kind = path.parent.name
        if kind == "api":
            assert data["version"] == "2.0" and data["requestContext"]["http"]["method"]
        elif kind == "turn":
            assert set(data) == {"sessionId", "turnId"}
        elif kind == "hooks":
            assert data["Records"] and all("dynamodb" in r for r in data["Records"])
        elif kind == "scheduler" and "RequestType" not in data:
            assert data["kind"] in ("schedule", "reminder")


def test_samconfig_builds_in_source_and_points_local_runs_at_a_local_server() -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    assert config["default"]["build"]["parameters"]["build_in_source"] is True
    env_file = config["default"]["local_start_api"]["parameters"]["env_vars"]
    env = json.loads((ROOT / env_file).read_text())["Parameters"]
    assert env["AGENTKIT_DYNAMODB_ENDPOINT"].startswith("http://")
