"""AWS list prices the cost benches quote (us-east-1, on-demand, x86_64, no free tier).

Source: the public AWS pricing pages for each service, as published in 2025 (DynamoDB's
on-demand rates are those after the price cut of November 2024). Prices change; update
`AS_OF` with the numbers. Free tiers are left out on purpose: a quote should hold at scale.
"""

from __future__ import annotations

AS_OF = "AWS public list prices, us-east-1, as published in 2025"

DYNAMODB_WRITE_UNIT = 0.625 / 1_000_000  # on-demand, per write request unit (1 KB)
DYNAMODB_READ_UNIT = 0.125 / 1_000_000  # on-demand, per read request unit (4 KB, strong)
DYNAMODB_STORAGE_GB_MONTH = 0.25
LAMBDA_GB_SECOND = 0.0000166667  # x86_64, first pricing tier
LAMBDA_REQUEST = 0.20 / 1_000_000
HTTP_API_REQUEST = 1.00 / 1_000_000  # API Gateway HTTP API, first 300 M a month, per 512 KB
SCHEDULER_INVOCATION = 1.00 / 1_000_000  # EventBridge Scheduler, beyond its free 14 M
# Reads of a DynamoDB stream by a Lambda trigger are not charged (the hooks function's own
# invocations and duration are).
STREAMS_READ_BY_LAMBDA = 0.0

# Amazon Bedrock AgentCore Runtime, for comparison: consumption-based, per second of
# active CPU and of peak memory (its pricing page, as published at GA in October 2025).
AGENTCORE_VCPU_HOUR = 0.0895
AGENTCORE_GB_HOUR = 0.00945
