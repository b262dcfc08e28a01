"""The deployed shape on one machine: `agentkit serve --emulate-aws`.

API Gateway (HTTP API, payload 2.0), Lambda (synchronous and asynchronous invokes, with
timeouts and retries), DynamoDB Streams and EventBridge Scheduler are emulated around the
real Lambda handlers of `agentkit.aws.handlers`, over a DynamoDB-API server on loopback
(moto, or DynamoDB Local). One module per emulated service; `--chaos` injects the faults
the real services produce (see `agentkit.emulator.chaos`).

This package is an adapter: nothing in the core imports it.
"""
