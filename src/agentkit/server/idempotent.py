"""The `Idempotency-Key` header on the write routes (the rules: `engine/idempotency.py`).

A route hands its work to `answer_once`. Without the header the work runs as before; with
it, a retry of the same request gets the first answer back with `Idempotent-Replayed:
true`, and a reuse of the key for another request gets `422 idempotency_key_reused`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from agentkit.engine.idempotency import Answer, fingerprint, run_once
from agentkit.engine.service import Accepted, KeepsClaims
from agentkit.server.http_errors import JSONResponse
from agentkit.sessions import Principal

IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"

# Documents the header on the routes that take it (OpenAPI `parameters`).
IDEMPOTENCY_PARAMETER: dict[str, Any] = {
    "name": IDEMPOTENCY_HEADER,
    "in": "header",
    "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": 255},
    "description": (
        "A unique key per logical request (a UUID). A retry with the same key and body "
        "within 24 h returns the original response with `Idempotent-Replayed: true`."
    ),
}
IDEMPOTENT_ROUTE: dict[str, Any] = {"parameters": [IDEMPOTENCY_PARAMETER]}

Result = TypeVar("Result", bound=BaseModel | Response)


async def answer_once(
    request: Request,
    service: object,
    caller: Principal,
    route: str,
    work: Callable[[], Awaitable[Result]],
    shape: Callable[[Accepted], BaseModel] | None = None,
) -> Result | Response:
    """Run `work` once per `Idempotency-Key` of `caller` (every time without the header).

    `shape` (a follow-up) is how the route answers an `Accepted`: the answer is then kept
    before the token rotates, so a crash after the rotation cannot strand the caller."""
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is None or not isinstance(service, KeepsClaims):
        return await work()
    store = service.claims

    async def run() -> Answer:
        return _answer(await work())

    answer, replayed = await run_once(
        store,
        principal_id=caller.id,
        key=key,
        request_fingerprint=fingerprint(route, dict(request.path_params), await _body(request)),
        run=run,
        shape=None if shape is None else lambda accepted: _answer(shape(accepted)),
    )
    headers = {REPLAYED_HEADER: "true"} if replayed else {}
    return JSONResponse(answer.body, status_code=answer.status, headers=headers)


def _answer(result: BaseModel | Response) -> Answer:
    if isinstance(result, BaseModel):
        return Answer(200, result.model_dump(mode="json", by_alias=True))
    raw = bytes(result.body)
    return Answer(result.status_code, json.loads(raw) if raw else None)


async def _body(request: Request) -> Any:
    # The route's model already parsed it (a body FastAPI read is cached on the request).
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
