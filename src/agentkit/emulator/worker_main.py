"""One Lambda execution environment: a process that imports one handler and runs one
invocation at a time, as Lambda does, until the emulator stops it (or kills it: a timeout).

`python -m agentkit.emulator.worker_main HANDLER IN_FD OUT_FD SERIAL`. Requests and replies
are JSON lines on the two pipes; stdout and stderr stay the function's log.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
import uuid
from typing import Any


class InvocationContext:
    """The Lambda context object: names, request id, and the time left before the timeout."""

    def __init__(self, function_name: str, request_id: str, deadline: float) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 1024
        self.invoked_function_arn = (
            f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        )
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "emulated"
        self._deadline = deadline

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.time()) * 1000))


def _install_chaos(serial: int) -> None:
    spec_text = os.environ.get("AGENTKIT_EMULATOR_CHAOS", "")
    if not spec_text:
        return
    import boto3

    from agentkit.emulator.chaos import ChaosSpec, install_dynamodb_faults

    boto3.setup_default_session()
    assert boto3.DEFAULT_SESSION is not None
    install_dynamodb_faults(boto3.DEFAULT_SESSION.events, ChaosSpec.parse(spec_text), serial)


def _install_host() -> None:
    """With a lease TTL of the emulator's (a laptop's short retry delays), build the host
    the handlers would, with that TTL, and install it."""
    ttl = os.environ.get("AGENTKIT_EMULATOR_LEASE_TTL")
    if not ttl:
        return
    from agentkit.aws.handlers import _common
    from agentkit.aws.host import AwsHost, MetricsFanout
    from agentkit.aws.observability import record_turn_metrics

    _common.use_host(
        AwsHost.from_env(
            fanout=MetricsFanout(record_turn_metrics),
            runtime_options={"lease_ttl": float(ttl)},
        )
    )


def main(argv: list[str]) -> int:
    handler_path, in_fd, out_fd, serial = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    import logging

    logging.basicConfig(level=os.environ.get("AGENTKIT_EMULATOR_LOG_LEVEL", "WARNING"))
    _install_chaos(serial)
    _install_host()
    module_name, _, attr = handler_path.rpartition(".")
    handler: Any = getattr(importlib.import_module(module_name), attr)
    function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", module_name)
    requests = os.fdopen(in_fd, "rb")
    replies = os.fdopen(out_fd, "wb")
    replies.write(b'{"ready": true}\n')
    replies.flush()
    for line in requests:
        request = json.loads(line)
        context = InvocationContext(
            function_name, request.get("requestId") or str(uuid.uuid4()), request["deadline"]
        )
        try:
            result = handler(request["event"], context)
            reply: dict[str, Any] = {"ok": True, "result": result}
        except Exception as exc:
            traceback.print_exc()
            reply = {
                "ok": False,
                "errorType": type(exc).__name__,
                "errorMessage": str(exc)[:2000],
            }
        replies.write(json.dumps(reply, default=str).encode("utf-8") + b"\n")
        replies.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
