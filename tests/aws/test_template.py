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

from agentkit.aws.project_files import project_files
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
        # A wildcard only ever follows a stack-specific prefix, a table/index path, the
        # workspace bucket's session or blob prefix, or (under a condition naming the configured
        # inference profile) the foundation models that profile routes to.
        for match in re.finditer(r"[^\"]*\*[^\"]*", text):
            piece = match.group(0)
            if "foundation-model/*" in piece:
                assert "bedrock:InferenceProfileArn" in json.dumps(st.get("Condition")), role
                continue
            assert (
                "${AWS::StackName}" in piece
                or "/index/*" in piece
                or "${WorkspaceBucket.Arn}/sessions/*" in piece
                or "${WorkspaceBucket.Arn}/blobs/*" in piece
                or "${GitHubWebhookSecretName}-??????" in piece
                or "${GitHubTokenName}-??????" in piece
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


# -- security posture (docs/deploy.md) -------------------------------------------------

FUNCTIONS = ("ApiFunction", "TurnFunction", "HooksFunction", "SchedulerFunction")
ROLES = {
    "ApiFunction": "ApiRole",
    "TurnFunction": "TurnRole",
    "HooksFunction": "HooksRole",
    "SchedulerFunction": "SchedulerRole",
}


def _role_statements(template: dict[str, Any], role: str) -> list[Any]:
    (policy,) = template["Resources"][role]["Properties"]["Policies"]
    return list(policy["PolicyDocument"]["Statement"])


def _conditional(st: Any) -> tuple[str | None, dict[str, Any]]:
    """(condition, statement) of a statement, unwrapping `!If [Cond, st, NoValue]`."""
    if isinstance(st, dict) and "If" in st:
        cond, then, otherwise = st["If"]
        assert otherwise == {"Ref": "AWS::NoValue"}
        return cond, then
    return None, st


def test_bearer_secret_grant_matches_only_the_secret_not_its_namesakes(
    template: dict[str, Any],
) -> None:
    # Secrets Manager appends "-" and six random characters to a secret's name: "-*" would
    # also match "agentkit/bearer-token-old" or "agentkit/bearer-token-anything".
    _, st = next(
        _conditional(x)
        for x in _role_statements(template, "ApiRole")
        if _conditional(x)[1].get("Sid") == "BearerToken"
    )
    secret_arn = st["Resource"]["If"][2]["Sub"]
    assert secret_arn.endswith(":secret:${BearerTokenName}-??????"), secret_arn


def test_customer_managed_key_is_optional_and_granted_narrowly(template: dict[str, Any]) -> None:
    param = template["Parameters"]["KmsKeyArn"]
    assert param["Default"] == ""
    assert re.fullmatch(param["AllowedPattern"], "")
    assert re.fullmatch(
        param["AllowedPattern"], "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd"
    )
    assert not re.fullmatch(param["AllowedPattern"], "*")
    assert template["Conditions"]["UseKms"] == {"Not": [{"Equals": [{"Ref": "KmsKeyArn"}, ""]}]}
    for role in ROLES.values():
        kms = [
            (cond, st)
            for cond, st in map(_conditional, _role_statements(template, role))
            if any(a.startswith("kms:") for a in st["Action"])
        ]
        assert kms == [
            (
                "UseKms",
                {
                    "Sid": "CustomerManagedKey",
                    "Effect": "Allow",
                    "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                    "Resource": {"Ref": "KmsKeyArn"},
                },
            )
        ], role


def test_the_key_encrypts_tables_queues_bucket_logs_and_environment(
    template: dict[str, Any],
) -> None:
    res = template["Resources"]
    key = {"If": ["UseKms", {"Ref": "KmsKeyArn"}, {"Ref": "AWS::NoValue"}]}
    assert template["Globals"]["Function"]["KmsKeyArn"] == key
    for table in ("SessionsTable", "EventsTable"):
        sse = res[table]["Properties"]["SSESpecification"]
        assert sse["SSEEnabled"] is True and sse["KMSMasterKeyId"] == key, table
    for queue in resources(template, "AWS::SQS::Queue").values():
        props = queue["Properties"]
        assert props["KmsMasterKeyId"] == key
        assert props["SqsManagedSseEnabled"] == {"If": ["UseKms", {"Ref": "AWS::NoValue"}, True]}
    (rule,) = res["WorkspaceBucket"]["Properties"]["BucketEncryption"][
        "ServerSideEncryptionConfiguration"
    ]
    assert rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == key
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert rule["BucketKeyEnabled"] is True
    for group in resources(template, "AWS::Logs::LogGroup").values():
        assert group["Properties"]["KmsKeyId"] == key


def test_model_access_is_scoped_to_the_configured_model(template: dict[str, Any]) -> None:
    bedrock = [
        st
        for _, st in map(_conditional, _role_statements(template, "TurnRole"))
        if any(a.startswith("bedrock:") for a in st["Action"])
    ]
    assert bedrock
    for st in bedrock:
        text = json.dumps(st["Resource"])
        if "foundation-model/*" in text:
            condition = json.dumps(st["Condition"]["StringEquals"])
            assert "bedrock:InferenceProfileArn" in condition and "ModelId" in condition
        else:
            assert "*" not in text.replace("bedrock:*::", ""), text
            assert "ModelId" in text, text
    # No other role may call a model.
    for role in ("ApiRole", "HooksRole", "SchedulerRole"):
        for _, st in map(_conditional, _role_statements(template, role)):
            assert not any(a.startswith("bedrock:") for a in st["Action"]), role


def test_every_function_logs_to_its_own_group_with_retention(template: dict[str, Any]) -> None:
    res = template["Resources"]
    for fn in FUNCTIONS:
        group = res[fn]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
        props = res[group]["Properties"]
        assert res[group]["Type"] == "AWS::Logs::LogGroup"
        assert props["RetentionInDays"] == {"Ref": "LogRetentionDays"}
        logs = [
            st
            for _, st in map(_conditional, _role_statements(template, ROLES[fn]))
            if st.get("Sid") == "Logs"
        ]
        assert [st["Resource"] for st in logs] == [{"GetAtt": f"{group}.Arn"}], fn
    assert template["Parameters"]["LogRetentionDays"]["Default"] in (7, 14, 30, 60, 90)


def test_every_function_has_a_reserved_concurrency_parameter(template: dict[str, Any]) -> None:
    res = template["Resources"]
    for fn in FUNCTIONS:
        cond, ref, otherwise = res[fn]["Properties"]["ReservedConcurrentExecutions"]["If"]
        param = template["Parameters"][ref["Ref"]]
        assert param["Type"] == "Number" and param["Default"] > 0, fn
        assert otherwise == {"Ref": "AWS::NoValue"}
        # -1 is the documented "reserve nothing" for accounts with a small quota.
        assert template["Conditions"][cond] == {"Not": [{"Equals": [ref, -1]}]}
    turn = res["TurnFunction"]["Properties"]["ReservedConcurrentExecutions"]["If"][1]
    assert turn == {"Ref": "TurnReservedConcurrency"}


def test_http_api_access_log_names_the_request_and_nothing_secret(
    template: dict[str, Any],
) -> None:
    settings = template["Resources"]["HttpApiStage"]["Properties"]["AccessLogSettings"]
    assert settings["DestinationArn"] == {"GetAtt": "HttpApiAccessLogGroup.Arn"}
    line = json.loads(settings["Format"])  # a JSON object per request
    assert line["requestId"] == "$context.requestId"
    text = settings["Format"].lower()
    for secret in ("authorization", "header", "body", "querystring", "cookie"):
        assert secret not in text, secret


def test_workspace_bucket_is_private_encrypted_expiring_and_tls_only(
    template: dict[str, Any],
) -> None:
    res = template["Resources"]
    props = res["WorkspaceBucket"]["Properties"]
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert len(props["PublicAccessBlockConfiguration"]) == 4
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled" and rule["Prefix"] == "sessions/"
    assert rule["ExpirationInDays"] == {"Ref": "WorkspaceRetentionDays"}
    (deny,) = res["WorkspaceBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env["AGENTKIT_WORKSPACE_BUCKET"] == {"Ref": "WorkspaceBucket"}


def _s3_grants(template: dict[str, Any], role: str, prefix: str) -> dict[str, Any]:
    """A role's S3 actions on one prefix of the workspace bucket: action -> (resource,
    condition)."""
    out: dict[str, Any] = {}
    for _, st in map(_conditional, _role_statements(template, role)):
        if prefix not in json.dumps([st["Resource"], st.get("Condition")]):
            continue
        for action in st["Action"] if isinstance(st["Action"], list) else [st["Action"]]:
            if isinstance(action, str) and action.startswith("s3:"):
                out[action] = (st["Resource"], st.get("Condition"))
    return out


def test_only_the_api_and_turn_functions_touch_workspaces(template: dict[str, Any]) -> None:
    def s3(role: str) -> dict[str, Any]:
        return _s3_grants(template, role, "sessions/*")

    objects = {"Sub": "${WorkspaceBucket.Arn}/sessions/*"}
    assert s3("ApiRole") == {"s3:PutObject": (objects, None)}
    listing = ({"GetAtt": "WorkspaceBucket.Arn"}, {"StringLike": {"s3:prefix": "sessions/*"}})
    assert s3("TurnRole") == {
        "s3:GetObject": (objects, None),
        "s3:PutObject": (objects, None),
        "s3:DeleteObject": (objects, None),
        "s3:ListBucket": listing,
    }
    assert s3("HooksRole") == {} and s3("SchedulerRole") == {}


def test_blobs_are_written_by_appenders_and_read_by_the_hooks(template: dict[str, Any]) -> None:
    objects = {"Sub": "${WorkspaceBucket.Arn}/blobs/*"}
    listing = ({"GetAtt": "WorkspaceBucket.Arn"}, {"StringLike": {"s3:prefix": "blobs/*"}})
    for role in ("ApiRole", "TurnRole", "SchedulerRole"):
        assert _s3_grants(template, role, "blobs/*") == {
            "s3:GetObject": (objects, None),
            "s3:PutObject": (objects, None),
            "s3:ListBucket": listing,
        }, role
    # Blobs are never deleted (events name them) nor written by the hooks.
    assert _s3_grants(template, "HooksRole", "blobs/*") == {"s3:GetObject": (objects, None)}
    rule = template["Resources"]["WorkspaceBucket"]["Properties"]["LifecycleConfiguration"]
    assert [r["Prefix"] for r in rule["Rules"]] == ["sessions/"]  # blobs never expire


def test_every_scanner_suppression_gives_its_reason(template: dict[str, Any]) -> None:
    skipped = {}
    for name, resource in template["Resources"].items():
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
            assert re.fullmatch(r"CKV2?_AWS_\d+", skip["id"]), (name, skip)
            assert len(skip["comment"].split()) >= 8, (name, skip)
            skipped.setdefault(skip["id"], set()).add(name)
    assert skipped["CKV_AWS_117"] == set(FUNCTIONS)  # no VPC, on purpose
    # Synchronous, or asynchronous with an on-failure destination: no dead-letter queue.
    assert skipped["CKV_AWS_116"] == set(FUNCTIONS)


def test_local_runs_keep_local_workspace_folders() -> None:
    env = json.loads((ROOT / "events" / "env.local.json").read_text())["Parameters"]
    assert env["AGENTKIT_WORKSPACE_BUCKET"] == ""


def _snapstart_apply_on(template: dict[str, Any], enabled: str) -> dict[str, str]:
    """Each function's effective `SnapStart.ApplyOn` with `EnableSnapStart=enabled` (the
    template's `!If` resolved the way CloudFormation does)."""
    condition = template["Conditions"]["UseSnapStart"]
    (param, value) = condition["Equals"]
    assert param == {"Ref": "EnableSnapStart"}
    effective: dict[str, str] = {}
    for name, fn in resources(template, "AWS::Serverless::Function").items():
        snap = fn["Properties"].get("SnapStart")
        if snap is None:
            effective[name] = "None"
            continue
        cond, when_on, when_off = snap["ApplyOn"]["If"]
        assert cond == "UseSnapStart"
        effective[name] = when_on if enabled == value else when_off
    return effective


def test_snapstart_is_a_parameter_off_by_default(template: dict[str, Any]) -> None:
    param = template["Parameters"]["EnableSnapStart"]
    assert param["Default"] == "false"
    assert sorted(param["AllowedValues"]) == ["false", "true"]
    off = _snapstart_apply_on(template, param["Default"])
    assert set(off.values()) == {"None"}  # no function snapshots by default
    on = _snapstart_apply_on(template, "true")
    assert on == {
        "ApiFunction": "PublishedVersions",
        "TurnFunction": "PublishedVersions",
        "HooksFunction": "None",  # batch work off the stream: no one waits on its start
        "SchedulerFunction": "None",
    }


def test_snapstart_functions_are_invoked_through_their_published_alias(
    template: dict[str, Any],
) -> None:
    """SnapStart restores published versions only: API Gateway, its permission and the
    turn dispatcher all target the `live` alias that AutoPublishAlias keeps current."""
    res = template["Resources"]
    for name in ("ApiFunction", "TurnFunction"):
        assert res[name]["Properties"]["AutoPublishAlias"] == "live"
    assert res["HttpApiIntegration"]["Properties"]["IntegrationUri"] == {"Ref": "ApiFunction.Alias"}
    assert res["ApiInvokePermission"]["Properties"]["FunctionName"] == {"Ref": "ApiFunction.Alias"}
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env["AGENTKIT_TURN_FUNCTION"] == {"Sub": "${AWS::StackName}-turn:live"}
    dispatch = json.dumps(template["Resources"]["ApiRole"]["Properties"]["Policies"])
    assert "function:${AWS::StackName}-turn:live" in dispatch


def test_scheduler_deliveries_go_through_the_alias_their_retry_settings_are_on(
    template: dict[str, Any],
) -> None:
    """SAM puts a function's EventInvokeConfig on its AutoPublishAlias: schedules, reminders
    and lost turns must invoke SchedulerFunction through `live`, or its retries and failure
    queue never apply."""
    res = template["Resources"]
    scheduler = res["SchedulerFunction"]["Properties"]
    assert scheduler["AutoPublishAlias"] == "live" and "EventInvokeConfig" in scheduler
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    target = json.dumps(env["AGENTKIT_SCHEDULER_TARGET_ARN"])
    assert target.endswith('-scheduler:live"}'), target
    on_failure = res["TurnFunction"]["Properties"]["EventInvokeConfig"]["DestinationConfig"]
    assert json.dumps(on_failure["OnFailure"]["Destination"]).endswith('-scheduler:live"}')


def test_scheduler_function_sweeps_stranded_turns_on_a_rate_schedule(
    template: dict[str, Any],
) -> None:
    """Open turns nobody works on are swept on AWS by a schedule of the stack: the input is
    the one SchedulerFunction's handler reads as a sweep."""
    events = template["Resources"]["SchedulerFunction"]["Properties"]["Events"]
    sweeps = [
        e["Properties"]
        for e in events.values()
        if e["Type"] == "ScheduleV2" and json.loads(e["Properties"]["Input"]) == {"kind": "sweep"}
    ]
    assert len(sweeps) == 1
    assert re.fullmatch(r"rate\(\d+ minutes?\)", sweeps[0]["ScheduleExpression"])


def _value(value: Any, params: dict[str, str]) -> Any:
    return params.get(value["Ref"], value) if isinstance(value, dict) and "Ref" in value else value


def _condition(template: dict[str, Any], expr: Any, params: dict[str, str]) -> bool:
    """A condition of the template evaluated as CloudFormation would, for `params`."""
    if isinstance(expr, str):
        return _condition(template, template["Conditions"][expr], params)
    [(op, args)] = expr.items()
    if op == "Condition":
        return _condition(template, args, params)
    if op == "Equals":
        return bool(_value(args[0], params) == _value(args[1], params))
    if op == "Not":
        return not _condition(template, args[0], params)
    if op == "Or":
        return any(_condition(template, a, params) for a in args)
    raise AssertionError(f"no evaluation for {op}")


def _resolve(value: Any, template: dict[str, Any], params: dict[str, str]) -> Any:
    """Evaluates the !If and !Ref of a property as CloudFormation would."""
    if isinstance(value, dict) and set(value) == {"If"}:
        name, when_true, when_false = value["If"]
        chosen = when_true if _condition(template, name, params) else when_false
        return _resolve(chosen, template, params)
    return _value(value, params)


def _otel_params(endpoint: str = "", layer: str = "") -> dict[str, str]:
    return {
        "OtlpEndpoint": endpoint,
        "OtelCollectorLayerArn": layer,
        "AWS::StackName": "stack",
        "AWS::NoValue": "<none>",
    }


def _function_environments(
    template: dict[str, Any], params: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """Each function's variables (Globals merged with its own), OTEL_* resolved."""
    base = template["Globals"]["Function"]["Environment"]["Variables"]
    out: dict[str, dict[str, Any]] = {}
    for name, fn in resources(template, "AWS::Serverless::Function").items():
        own = fn["Properties"].get("Environment", {}).get("Variables", {})
        merged = {**base, **own}
        resolved = {
            k: _resolve(v, template, params) for k, v in merged.items() if k.startswith("OTEL_")
        }
        out[name] = {k: v for k, v in resolved.items() if v != "<none>"}
    return out


def _function_layers(template: dict[str, Any], params: dict[str, str]) -> dict[str, list[Any]]:
    """Each function's layers as SAM gives them: the Globals' followed by its own."""
    base = template["Globals"]["Function"].get("Layers", [])
    out: dict[str, list[Any]] = {}
    for name, fn in resources(template, "AWS::Serverless::Function").items():
        layers = [_resolve(x, template, params) for x in base + fn["Properties"].get("Layers", [])]
        out[name] = [x for x in layers if x != "<none>"]
    return out


def test_otlp_export_is_off_by_default(template: dict[str, Any]) -> None:
    for name in ("OtlpEndpoint", "OtelCollectorLayerArn"):
        assert template["Parameters"][name]["Default"] == ""
    envs = _function_environments(template, _otel_params())
    assert set(envs) >= {"ApiFunction", "TurnFunction", "HooksFunction", "SchedulerFunction"}
    assert all(env == {} for env in envs.values()), envs
    layers = _function_layers(template, _otel_params())
    assert all(x == [{"Ref": "DepsLayer"}] for x in layers.values()), layers


def test_otlp_endpoint_parameter_reaches_every_function(template: dict[str, Any]) -> None:
    url = "https://collector.example.com:4318"
    assert re.fullmatch(template["Parameters"]["OtlpEndpoint"]["AllowedPattern"], url)
    assert not re.fullmatch(template["Parameters"]["OtlpEndpoint"]["AllowedPattern"], "x y")
    for name, env in _function_environments(template, _otel_params(endpoint=url)).items():
        assert env == {"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SERVICE_NAME": "stack"}, name


COLLECTOR = "arn:aws:lambda:eu-west-1:901920570463:layer:aws-otel-collector-amd64-ver-0-117-0:1"


def test_a_collector_layer_joins_every_function_and_receives_its_export(
    template: dict[str, Any],
) -> None:
    pattern = template["Parameters"]["OtelCollectorLayerArn"]["AllowedPattern"]
    assert re.fullmatch(pattern, COLLECTOR)
    assert not re.fullmatch(pattern, "aws-otel-collector") and not re.fullmatch(pattern, "x y")
    params = _otel_params(layer=COLLECTOR)
    for name, layers in _function_layers(template, params).items():
        assert layers == [{"Ref": "DepsLayer"}, COLLECTOR], name
    for name, env in _function_environments(template, params).items():
        assert env == {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318",
            "OTEL_SERVICE_NAME": "stack",
        }, name
    # An endpoint of one's own wins over the collector's local one.
    url = "https://collector.example.com:4318"
    envs = _function_environments(template, _otel_params(endpoint=url, layer=COLLECTOR))
    assert {env["OTEL_EXPORTER_OTLP_ENDPOINT"] for env in envs.values()} == {url}


def test_the_collector_layers_default_export_to_x_ray_is_allowed(template: dict[str, Any]) -> None:
    roles = {
        fn["Properties"]["Role"]["GetAtt"].split(".")[0]
        for fn in resources(template, "AWS::Serverless::Function").values()
    }
    for role in roles:
        statements = [
            st
            for policy in template["Resources"][role]["Properties"]["Policies"]
            for st in policy["PolicyDocument"]["Statement"]
        ]
        allowed = [_resolve(st, template, _otel_params()) for st in statements]
        actions = {
            a
            for st in allowed
            if isinstance(st, dict) and st.get("Effect") == "Allow"
            for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
        }
        assert {"xray:PutTraceSegments", "xray:PutTelemetryRecords"} <= actions, role


def test_otel_layer_requirements_are_the_otel_extra() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = set(pyproject["project"]["optional-dependencies"]["otel"])
    lines = (ROOT / "layers" / "requirements-otel.txt").read_text().splitlines()
    assert {x for x in lines if x and x[0] != "#"} == wanted
    makefile = (ROOT / "layers" / "Makefile").read_text()
    assert "requirements-otel.txt" in makefile and "LAYER_OTEL" in makefile
    # A project made by `agentkit init` has the same switch, taking the extra from the index.
    scaffold = project_files("my-agent")
    assert scaffold["layers/Makefile"] == makefile
    assert "agentkit-serverless[otel]==" in scaffold["layers/requirements-otel.txt"]
