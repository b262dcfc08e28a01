"""Eval runs on AWS: started by the API function, run by TurnFunction.

`POST /v1/dev/evals/runs` saves the run's snapshot through the store (DynamoDB) and hands
the run id to TurnFunction in an asynchronous invocation (`{"kind": "evalRun", "runId"}`);
the API request returns 202 at once. TurnFunction runs the cases (each in a fresh
in-memory session, as `agentkit eval` does), saving the snapshot as cases finish, so
`GET /v1/dev/evals/runs/{id}` polls progress from any API instance. Lambda may deliver an
invocation twice: the first claims the run and the repeat does nothing. A run whose
invocation died (timeout, crash) is marked `failed` once it has been `running` for longer
than the turn function may run.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from agentkit.evals.runs import EvalRunService, StoreRuns
from agentkit.project.bundle import AgentBundle

EVAL_RUN_KIND = "evalRun"
CLAIM_TTL = 7 * 86400.0


def eval_run_payload(run_id: str) -> str:
    """The event TurnFunction receives for an eval run."""
    return json.dumps({"kind": EVAL_RUN_KIND, "runId": run_id})


def eval_run_service(
    bundle: AgentBundle, store: Any, launcher: Callable[[str], Awaitable[None]]
) -> EvalRunService:
    """The service the eval routes use on AWS: snapshots in the store, runs launched."""
    return EvalRunService(bundle, repo=StoreRuns(store), launcher=launcher)


async def execute_run(
    service: EvalRunService, run_id: str, claim: Callable[[str, float], Awaitable[bool]]
) -> bool:
    """TurnFunction's side: run `run_id` unless another invocation already took it."""
    if not await claim(f"eval-run#{run_id}", CLAIM_TTL):
        return False
    return await service.execute(run_id)


__all__ = ["EVAL_RUN_KIND", "eval_run_payload", "eval_run_service", "execute_run"]
