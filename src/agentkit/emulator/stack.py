"""One emulated stack: moto, the tables and schedule group, the functions' environments,
the Lambda API, the stream poller, the scheduler, and API Gateway in front.

`EmulatedStack.start()` brings it all up (as `sam deploy` would, including the schedule
reconciler's custom resource); `serve_emulated` is what `agentkit serve --emulate-aws` runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.emulator.chaos import Chaos, ChaosSpec
from agentkit.emulator.functions import FunctionPool
from agentkit.emulator.lambda_service import LambdaService, lambda_api
from agentkit.emulator.scheduler import SchedulerService
from agentkit.emulator.streams import StreamPoller
from agentkit.emulator.template import StackShape, stack_shape

log = logging.getLogger("agentkit.emulator")

REGION = "us-east-1"
ACCOUNT = "123456789012"
# Environments per function at most: the template reserves more, a laptop has few cores.
LOCAL_CONCURRENCY = {
    "ApiFunction": 4,
    "TurnFunction": 4,
    "HooksFunction": 1,
    "SchedulerFunction": 2,
}


@dataclass(slots=True)
class EmulatorOptions:
    """What `--emulate-aws` and its companion flags ask for."""

    project: Path
    bearer_token: str
    stack_name: str = "agentkit"
    dynamodb_endpoint: str | None = None
    chaos: ChaosSpec = field(default_factory=ChaosSpec)
    # 1.0: Lambda's retry delays (about 1 and 2 minutes), the 5-minute sweep and the
    # 60 s turn lease; smaller values shrink them all for a laptop's loop.
    time_scale: float = 1.0
    state_dir: Path | None = None
    model: str | None = None


def _free_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


class EmulatedStack:
    """The deployed shape, on loopback."""

    def __init__(self, options: EmulatorOptions) -> None:
        self.options = options
        self.shape: StackShape = stack_shape(options.project)
        self.chaos = Chaos(options.chaos)
        suffix = uuid.uuid4().hex[:8]
        name = options.stack_name
        self.sessions_table = f"{name}-{suffix}-sessions"
        self.events_table = f"{name}-{suffix}-events"
        self.group = f"{name}-{suffix}"
        self.function_names = {
            "ApiFunction": f"{name}-api",
            "TurnFunction": f"{name}-turn",
            "HooksFunction": f"{name}-hooks",
            "SchedulerFunction": f"{name}-scheduler",
        }
        self.moto_url = ""
        self.control_url = ""
        self._moto: subprocess.Popen[bytes] | None = None
        self.lambdas: LambdaService | None = None
        self.streams: StreamPoller | None = None
        self.scheduler: SchedulerService | None = None
        self._control: Any = None
        self._control_task: asyncio.Task[None] | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self.cfn_responses: list[dict[str, Any]] = []
        self._clients: dict[str, Any] = {}

    @property
    def dynamodb_url(self) -> str:
        return self.options.dynamodb_endpoint or self.moto_url

    def client(self, service: str) -> Any:
        """A boto3 client of the emulator's own (never chaos-injected)."""
        if service not in self._clients:
            import boto3

            url = self.dynamodb_url if service.startswith("dynamodb") else self.moto_url
            self._clients[service] = boto3.client(
                service,  # type: ignore[call-overload]
                region_name=REGION,
                endpoint_url=url,
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
        return self._clients[service]

    def build(self) -> Path:
        """`sam build`: the project compiled into the functions' build folder."""
        from agentkit.project.build import build_project

        state = self.options.state_dir or self.options.project / ".agentkit" / "emulate"
        build_dir = (state / "build").resolve()
        build_project(self.options.project, build_dir)
        return build_dir

    async def start(self) -> None:
        """Bring up everything but API Gateway's front (see `gateway`)."""
        from agentkit.emulator.moto_server import start_moto
        from agentkit.store.dynamodb import DynamoDBSettings, create_tables

        build_dir = await asyncio.to_thread(self.build)
        self.moto_url, self._moto = await asyncio.to_thread(start_moto)
        await asyncio.to_thread(
            create_tables,
            self.client("dynamodb"),
            DynamoDBSettings(
                endpoint_url=self.dynamodb_url,
                sessions_table=self.sessions_table,
                events_table=self.events_table,
            ),
        )
        await asyncio.to_thread(self.client("scheduler").create_schedule_group, Name=self.group)
        control_sock = _free_socket()
        self.control_url = f"http://127.0.0.1:{control_sock.getsockname()[1]}"
        env = self._function_env(build_dir, self.control_url)
        pools = {
            logical: FunctionPool(
                self.shape.function(logical),
                {**env, "AWS_LAMBDA_FUNCTION_NAME": self.function_names[logical]},
                LOCAL_CONCURRENCY[logical],
            )
            for logical in self.function_names
        }
        self.lambdas = LambdaService(
            pools,
            self.chaos,
            retry_delays=self._retry_delays(),
            names={v: k for k, v in self.function_names.items()},
        )
        self._control_task = asyncio.create_task(
            _serve_quietly(
                lambda_api(self.lambdas, self.cfn_responses, self.wait_quiet), control_sock
            )
        )
        await asyncio.gather(*(pool.warm() for pool in pools.values()))
        await self._reconcile_schedules()
        self.streams = StreamPoller(
            lambda: self.client("dynamodbstreams"),
            lambda: self.client("dynamodb"),
            self.events_table,
            self.shape.stream,
            self.lambdas,
            self.chaos,
            region=REGION,
        )
        self.streams.start()
        self.scheduler = SchedulerService(
            lambda: self.client("scheduler"), self.group, self.lambdas, self.chaos
        )
        self.scheduler.start()
        self._sweeper = asyncio.create_task(self._sweep())

    def _function_env(self, build_dir: Path, control_url: str) -> dict[str, str]:
        name = self.options.stack_name
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AGENTKIT_", "AWS_", "POWERTOOLS_"))
        }
        env.update(
            {
                "AGENTKIT_MODEL": self.options.model or "",
                "AGENTKIT_STAGE": "emulated",
                "AGENTKIT_EMULATED": "1",
                "AGENTKIT_SESSIONS_TABLE": self.sessions_table,
                "AGENTKIT_EVENTS_TABLE": self.events_table,
                "AGENTKIT_SCHEDULE_GROUP": self.group,
                "AGENTKIT_SCHEDULER_TARGET_ARN": (
                    f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}-scheduler:live"
                ),
                "AGENTKIT_SCHEDULER_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/{name}-scheduler",
                "AGENTKIT_TURN_FUNCTION": f"{name}-turn:live",
                "AGENTKIT_AUTH_MODE": "bearer",
                "AGENTKIT_BEARER_TOKEN": self.options.bearer_token,
                "AGENTKIT_DYNAMODB_ENDPOINT": self.dynamodb_url,
                "AGENTKIT_DISPATCH": "lambda",
                "AGENTKIT_BUILD_DIR": str(build_dir),
                "AWS_REGION": REGION,
                "AWS_DEFAULT_REGION": REGION,
                "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing",
                # Service-specific endpoints: Lambda's invoke API is the emulator's own,
                # Scheduler's is moto's.
                "AWS_ENDPOINT_URL_LAMBDA": control_url,
                "AWS_ENDPOINT_URL_SCHEDULER": self.moto_url,
                "POWERTOOLS_SERVICE_NAME": name,
                "POWERTOOLS_METRICS_NAMESPACE": "agentkit",
                "POWERTOOLS_TRACE_DISABLED": "true",
                "POWERTOOLS_LOG_LEVEL": os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
                "POWERTOOLS_DEV": "false",
            }
        )
        for passthrough in ("AGENTKIT_TEST_HOOK_LOG", "AGENTKIT_TURN_MARGIN"):
            if os.environ.get(passthrough):
                env[passthrough] = os.environ[passthrough]
        if self.options.chaos.active:
            env["AGENTKIT_EMULATOR_CHAOS"] = self.options.chaos.as_text()
        if self.options.time_scale != 1.0:
            lease = max(15.0, 60.0 * self.options.time_scale)
            env["AGENTKIT_EMULATOR_LEASE_TTL"] = str(lease)
            # A reminder that met a busy session waits its minute on the same scale.
            busy_retry = max(1, round(60 * self.options.time_scale))
            env["AGENTKIT_REMINDER_BUSY_RETRY"] = f"{busy_retry}s"
            # A lost firing is past its attempts once Lambda's (scaled) retry delays and
            # three attempts are: the emulator's chaos kills an attempt within 2 s, and a
            # reminder's firing runs no turn itself, so ten seconds each is ample.
            grace = round(sum(self._retry_delays()) + 3 * 10.0)
            env["AGENTKIT_REMINDER_OVERDUE_GRACE"] = f"{grace}s"
        return env

    def _retry_delays(self) -> tuple[float, float]:
        """Lambda's waits before its two retries of an asynchronous invoke, scaled."""
        return (60.0 * self.options.time_scale, 120.0 * self.options.time_scale)

    async def _reconcile_schedules(self) -> None:
        """The ManifestSchedules custom resource: CloudFormation's Create request."""
        assert self.lambdas is not None
        event = {
            "RequestType": "Create",
            "ServiceToken": self.function_names["SchedulerFunction"],
            "ResponseURL": f"{self.control_url}/cloudformation-response",
            "StackId": (
                f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/"
                f"{self.options.stack_name}/emulated"
            ),
            "RequestId": str(uuid.uuid4()),
            "LogicalResourceId": "ManifestSchedules",
            "ResourceType": "Custom::AgentkitSchedules",
            "ResourceProperties": {"ScheduleGroup": self.group},
        }
        result = await self.lambdas.invoke("SchedulerFunction", event, chaos=False)
        if not result.ok or not (result.payload or {}).get("ok"):
            raise RuntimeError(f"the schedule reconciler failed: {result}")

    async def _sweep(self) -> None:
        """The stack's `rate(5 minutes)` sweep schedule (SchedulerFunction's Sweep event)."""
        assert self.lambdas is not None
        while True:
            await asyncio.sleep(300.0 * self.options.time_scale)
            self.lambdas.invoke_async("SchedulerFunction", {"kind": "sweep"})

    def gateway(self) -> Any:
        from agentkit.emulator.apigateway import gateway_app

        assert self.lambdas is not None
        return gateway_app(self.lambdas, self.shape)

    def quiet(self) -> bool:
        """Nothing running or pending: no invocation under way, no asynchronous delivery or
        retry waiting, and the stream poller has found nothing new in a read that began
        after the last invocation ended (so every hook batch, duplicates and late ones
        included, has been delivered). A due schedule or reminder fires on its own clock."""
        if self.lambdas is None or self.lambdas.busy:
            return False
        return self.streams is None or self.streams.caught_up_at >= self.lambdas.last_finished

    async def wait_quiet(self, timeout: float) -> bool:
        """Until `quiet` (True), or `timeout` seconds (False); woken by the parts' activity."""
        assert self.lambdas is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.quiet():
            left = deadline - loop.time()
            if left <= 0 or not await self.lambdas.activity.wait(left):
                return self.quiet()
        return True

    def counts(self) -> dict[str, Any]:
        """What ran and what was injected, for logs and the bench."""
        assert self.lambdas is not None
        return {
            "invocations": {k: p.invocations for k, p in self.lambdas.pools.items()},
            "coldStarts": {k: p.cold_starts for k, p in self.lambdas.pools.items()},
            "faults": dict(self.chaos.counts),
            "streamBatches": self.streams.delivered_batches if self.streams else 0,
            "firings": len(self.scheduler.firings) if self.scheduler else 0,
            "deadLetters": len(self.lambdas.dead_letters)
            + (len(self.streams.dead_letters) if self.streams else 0),
        }

    async def aclose(self) -> None:
        for part in (self.scheduler, self.streams):
            if part is not None:
                await part.aclose()
        for task in (self._sweeper, self._control_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.lambdas is not None:
            await self.lambdas.aclose()
            await asyncio.gather(
                *(p.aclose() for p in self.lambdas.pools.values()), return_exceptions=True
            )
        if self._moto is not None:
            from agentkit.emulator.moto_server import stop_moto

            await asyncio.to_thread(stop_moto, self._moto)
            self._moto = None


async def _serve_quietly(app: Any, sock: socket.socket) -> None:
    """A loopback uvicorn server that leaves signals to the main one."""
    import uvicorn

    class Quiet(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:
            yield

    server = Quiet(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()


def serve_emulated(options: EmulatorOptions, host: str, port: int) -> int:
    """Run the stack and API Gateway's front until SIGINT/SIGTERM."""
    import uvicorn

    from agentkit.hosts.connection_limits import ConnectionLimits, guarded_config

    try:
        front_sock = _free_socket(host, port)
    except OSError as exc:
        print(f"agentkit serve: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    stack = EmulatedStack(options)

    async def main() -> int:
        try:
            await stack.start()
        except Exception as exc:
            log.exception("the emulated stack did not start")
            print(f"agentkit serve: the emulated stack did not start: {exc}", file=sys.stderr)
            await stack.aclose()
            return 1
        # API Gateway's front gets the same guard against stalled clients as `serve`.
        config = guarded_config(
            stack.gateway(),
            ConnectionLimits(),
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=5,
        )
        server = uvicorn.Server(config)
        # Listening before the URL is announced: a client that reads it and connects at
        # once is queued in the backlog until uvicorn accepts, never refused.
        front_sock.listen(2048)
        actual = front_sock.getsockname()[1]
        print(
            json.dumps(
                {
                    "emulating": "aws",
                    "url": f"http://{host}:{actual}",
                    "dynamodb": stack.dynamodb_url,
                    "control": stack.control_url,
                    "chaos": options.chaos.as_text() if options.chaos.active else None,
                }
            ),
            file=sys.stderr,
            flush=True,
        )
        print(f"agentkit serve --emulate-aws: serving http://{host}:{actual}", file=sys.stderr)
        try:
            await server.serve(sockets=[front_sock])
        finally:
            log.warning("emulator counts: %s", json.dumps(stack.counts()))
            print(f"emulator counts: {json.dumps(stack.counts())}", file=sys.stderr, flush=True)
            await stack.aclose()
        return 0

    try:
        return asyncio.run(main())
    finally:
        front_sock.close()
