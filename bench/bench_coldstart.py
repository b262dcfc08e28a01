"""Lambda cold start, DynamoDB cost per turn, and package sizes. Printed, never asserted.

1. Cold start: a fresh interpreter imports ApiFunction's handler, loads the baked manifest
   and answers its first API Gateway (HTTP API 2.0) request, against a baseline handler of
   the same shape (FastAPI + Mangum + Powertools Logger + a boto3 DynamoDB client, one
   route). Both run in alternating rounds in this one run; the ratios of the median wall
   and CPU times are printed (goal: at most 1.0x). The request, `GET /v1/info`, calls no
   AWS API: the baseline builds its DynamoDB client at import, as Lambda guides advise;
   ApiFunction builds each client on its first call, so a first request that reads the
   store pays for that client there instead: the second ratio is for such a request
   (`GET /v1/sessions`, one DynamoDB request on a moto server, against a baseline route
   making one DynamoDB request too).
2. DynamoDB writes and write units of one standard turn (one tool call, then a ~500-token
   reply) through `AwsHost` on a moto server on loopback. moto reports no consumed
   capacity, so write units are the store's own estimate (1 WCU per started KB written).
3. Layer and function sizes from `.aws-sam/build` (run `make aws-build` first) against
   Lambda's 250 MB unzipped limit.

    python bench/bench_coldstart.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WRITE_OPERATIONS = {
    "put_item",
    "transact_write_items",
    "update_item",
    "delete_item",
    "batch_write_item",
}

BASELINE = """
import json, os
from fastapi import FastAPI
from mangum import Mangum
from aws_lambda_powertools import Logger
import boto3

logger = Logger(service="baseline")
ddb = boto3.client(
    "dynamodb",
    region_name="us-east-1",
    endpoint_url=os.environ.get("AGENTKIT_DYNAMODB_ENDPOINT") or None,
)
app = FastAPI()

@app.get("/v1/info")
def info():
    return {"ok": True, "name": "baseline"}

@app.get("/v1/sessions")
def sessions():  # one DynamoDB request, as agentkit's session list makes
    ddb.describe_table(TableName=os.environ["AGENTKIT_SESSIONS_TABLE"])
    return {"ok": True, "sessions": []}

handler = Mangum(app, lifespan="off")
"""

PROBE = """
import json, sys, time
t0 = time.perf_counter()
{setup}
event = json.load(open({event!r}))
response = handler(event, Ctx())
t1 = time.perf_counter()
assert response["statusCode"] == 200, response
print(json.dumps({{"seconds": t1 - t0, "modules": len(sys.modules)}}))
"""

CTX = """
class Ctx:
    function_name = "bench"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
    aws_request_id = "bench"
"""


def info_event(tmp: Path, route: str = "/v1/info") -> Path:
    event = json.loads((ROOT / "events" / "api" / "health.json").read_text())
    event["rawPath"] = event["requestContext"]["http"]["path"] = route
    event["routeKey"] = event["requestContext"]["routeKey"] = "$default"
    path = tmp / f"{route.strip('/').replace('/', '-')}.json"
    path.write_text(json.dumps(event))
    return path


def probe(setup: str, event: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, modules loaded) of one fresh interpreter."""
    code = CTX + PROBE.format(setup=setup, event=str(event))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise SystemExit(out.stderr[-3000:])
    line = [x for x in out.stdout.splitlines() if x.startswith('{"seconds"')][-1]
    return wall, cpu, json.loads(line)["modules"]


def cold_start(rounds: int, route: str = "/v1/info", endpoint: str | None = None) -> None:
    from agentkit.project.build import build_project
    from tests.aws.conftest import write_agent

    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        build_project(write_agent(tmp / "project"), tmp / "build")
        event = info_event(tmp, route)
        (tmp / "baseline.py").write_text(BASELINE)
        env = dict(
            os.environ,
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_DEFAULT_REGION="us-east-1",
            AGENTKIT_SESSIONS_TABLE="bench-sessions",
            AGENTKIT_EVENTS_TABLE="bench-events",
            AGENTKIT_BUILD_DIR=str(tmp / "build"),
            AGENTKIT_BEARER_TOKEN="dev-token",
            AGENTKIT_TURN_FUNCTION="bench-turn",
            POWERTOOLS_TRACE_DISABLED="true",  # as template.yaml deploys ApiFunction
            # Both sides import bytecode, as a deployed function does: the first (warm-up)
            # probe of each writes it to a cache of this run's own, so neither side pays
            # for compiling sources that happen to have no current .pyc here.
            PYTHONPYCACHEPREFIX=str(tmp / "pycache"),
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if endpoint is not None:
            env["AGENTKIT_DYNAMODB_ENDPOINT"] = endpoint
            env["AGENTKIT_SESSIONS_TABLE"], env["AGENTKIT_EVENTS_TABLE"] = make_tables(endpoint)
        ours_setup = "from agentkit.aws.handlers.api import handler"
        base_setup = f"sys.path.insert(0, {str(tmp)!r})\nfrom baseline import handler"
        probe(ours_setup, event, env)  # warm the OS file cache and write bytecode, both
        probe(base_setup, event, env)
        ours: list[tuple[float, float]] = []
        base: list[tuple[float, float]] = []
        mods = (0, 0)
        for _ in range(rounds):
            o, ocpu, om = probe(ours_setup, event, env)
            b, bcpu, bm = probe(base_setup, event, env)
            ours.append((o, ocpu))
            base.append((b, bcpu))
            mods = (om, bm)

        def median(runs: list[tuple[float, float]], i: int) -> float:
            return statistics.median(r[i] for r in runs)

        mo, mb = median(ours, 0), median(base, 0)
        co, cb = median(ours, 1), median(base, 1)
        print(
            f"cold start (fresh interpreter, import + manifest + first request {route}),"
            f" median of {rounds}"
        )
        # CPU time (user + system) is printed too: on a machine shared with other work the
        # wall-clock times drift with its load, the CPU each interpreter burns much less.
        print(f"  {'':<20}   {'wall':>9}   {'CPU':>9}")
        rows = (
            ("agentkit ApiFunction", mo, co, mods[0]),
            ("baseline handler", mb, cb, mods[1]),
        )
        for label, wall, cpu, modules in rows:
            print(
                f"  {label:<20} : {wall * 1000:6.1f} ms   {cpu * 1000:6.1f} ms  ({modules} modules)"
            )
        print(f"  ratio                : {mo / mb:8.2f}x  {co / cb:8.2f}x  (goal <= 1.0x)")


def make_tables(endpoint: str) -> tuple[str, str]:
    """A fresh pair of store tables on the moto server at `endpoint`; their names."""
    import uuid

    import boto3

    from agentkit.store.dynamodb import DynamoDBSettings, create_tables

    suffix = uuid.uuid4().hex[:8]
    settings = DynamoDBSettings(
        endpoint_url=endpoint, sessions_table=f"c{suffix}-s", events_table=f"c{suffix}-e"
    )
    client = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint)
    create_tables(client, settings)
    return settings.sessions_table, settings.events_table


def cold_start_reading_the_store(rounds: int) -> None:
    """The same, for a first request that makes one DynamoDB request (moto on loopback):
    here ApiFunction builds its DynamoDB client during the request."""
    from tests.fixtures.dynamodb import start_moto_server, stop_moto_server

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    url, proc = start_moto_server()
    try:
        cold_start(rounds, "/v1/sessions", url)
    finally:
        stop_moto_server(proc)


def writes_per_turn() -> None:
    import asyncio
    import uuid

    from agentkit.aws.clients import client as make_client
    from agentkit.aws.host import AwsHost
    from agentkit.aws.settings import AwsSettings
    from agentkit.models.scripted import ScriptedModel, Step, call
    from agentkit.project.build import build_project
    from agentkit.project.bundle import AgentBundle
    from agentkit.sessions import Principal
    from agentkit.store.dynamodb import DynamoDBSettings, create_tables
    from tests.aws.conftest import CapturingDispatcher, write_agent
    from tests.fixtures.dynamodb import start_moto_server, stop_moto_server

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    url, proc = start_moto_server()
    try:
        with tempfile.TemporaryDirectory() as raw:
            tmp = Path(raw)
            build_project(write_agent(tmp / "project"), tmp / "build")
            suffix = uuid.uuid4().hex[:8]
            settings = AwsSettings(
                sessions_table=f"b{suffix}-s",
                events_table=f"b{suffix}-e",
                dynamodb_endpoint=url,
                endpoint_url=url,
                bearer_token="x",
                build_dir=tmp / "build",
            )

            def clients(service: str) -> object:
                return make_client(service, settings)

            create_tables(
                clients("dynamodb"),
                DynamoDBSettings(
                    endpoint_url=url,
                    sessions_table=settings.sessions_table,
                    events_table=settings.events_table,
                ),
            )
            clients("scheduler").create_schedule_group(Name=settings.schedule_group)  # type: ignore[attr-defined]
            reply = " ".join(["word"] * 500)  # about 500 output tokens
            model = ScriptedModel(
                [
                    Step.tool_calls(call("remind_me", {"delay": "2h", "prompt": "Check."})),
                    Step.text(*[reply[i : i + 40] for i in range(0, len(reply), 40)]),
                ]
            )
            dispatcher = CapturingDispatcher()
            host = AwsHost(
                settings,
                bundle=AgentBundle.load_built(tmp / "build"),
                clients=clients,
                dispatcher=dispatcher,
                runtime_options={"model_resolver": lambda _id: model},
            )
            usage = host.store.usage

            async def turn() -> tuple[int, dict[str, int], float, int]:
                usage.reset()
                accepted = await host.runtime.start_session(
                    "Remind me to check the build, then explain.", principal=Principal("bench")
                )
                for payload in list(dispatcher.payloads):
                    await host.run_turn(payload["sessionId"], payload["turnId"])
                events = await host.store.read(accepted.session_id)
                failed = [e.data.get("error") for e in events if e.type == "turn.failed"]
                if failed:
                    print(f"  (the turn failed, numbers are not representative: {failed[0]})")
                writes = sum(n for op, n in usage.per_operation.items() if op in WRITE_OPERATIONS)
                return writes, dict(usage.per_operation), usage.estimated_write_units, len(events)

            writes, per_op, wcu, n_events = asyncio.run(turn())
            print("DynamoDB per standard turn (one tool call, ~500-token reply; read and write")
            print("requests include session creation and the message's acceptance)")
            print(f"  events recorded      : {n_events}")
            print(f"  write requests       : {writes}")
            print(f"  write units (est.)   : {wcu:.0f}")
            print(f"  all requests by op   : {json.dumps(per_op, sort_keys=True)}")
    finally:
        stop_moto_server(proc)


def sizes() -> None:
    build = ROOT / ".aws-sam" / "build"
    if not build.is_dir():
        print("sizes: no .aws-sam/build here; run `make aws-build` first")
        return

    def size(path: Path) -> int:
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())

    layer = size(build / "DepsLayer")
    print("package sizes (unzipped; Lambda's limit is 250 MB for a function and its layers)")
    print(f"  DepsLayer            : {layer / 1e6:6.1f} MB")
    for fn in ("ApiFunction", "TurnFunction", "HooksFunction", "SchedulerFunction"):
        own = size(build / fn)
        print(f"  {fn:<20} : {own / 1e6:6.1f} MB  (+ layer = {(own + layer) / 1e6:.1f} MB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cold_start(args.rounds)
    cold_start_reading_the_store(args.rounds)
    writes_per_turn()
    sizes()


if __name__ == "__main__":
    main()
