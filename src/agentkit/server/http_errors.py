"""Every error leaves the app as JSON `{ok:false, error, message?}`.

Framework errors are folded into the same shape: unknown routes (404), wrong methods (405),
request validation (400, never FastAPI's 422), and anything unexpected (500, logged, with
no internals in the body). Store and id errors raised past the service map to 404/400.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse as _StarletteJSONResponse

from agentkit.errors import HttpError, InvalidId, SessionNotFound

log = logging.getLogger("agentkit.server")

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
}


class JSONResponse(_StarletteJSONResponse):
    """JSON that never fails to encode: text with lone surrogates (which UTF-8 cannot
    carry) falls back to JSON escapes instead of turning an answer into a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def error_response(
    status: int, code: str, message: str | None = None, **extra: Any
) -> JSONResponse:
    body: dict[str, Any] = {"ok": False, "error": code}
    if message:
        body["message"] = message
    body.update(extra)
    headers = {"www-authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


def _describe(errors: list[Any]) -> tuple[str, list[dict[str, Any]]]:
    issues = []
    # An unknown key first: {"mesage": ...} is a typo of the missing key it also causes.
    errors = sorted(errors, key=lambda err: err.get("type") != "extra_forbidden")
    for err in errors[:20]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        text = "unknown key" if err.get("type") == "extra_forbidden" else err.get("msg")
        issues.append({"path": loc, "message": str(text or "invalid")})
    first = issues[0] if issues else {"path": "body", "message": "invalid request"}
    return f"{first['path']}: {first['message']}", issues


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HttpError)
    body = exc.body()
    headers = {"www-authenticate": "Bearer"} if exc.status == 401 else None
    if exc.headers:  # e.g. Retry-After on a 429
        headers = {**(headers or {}), **exc.headers}
    return JSONResponse(body, status_code=exc.status, headers=headers)


def _json_position(body: bytes, pos: object) -> str:
    """`line L, column C` for a character offset into the body, as an editor counts them."""
    if not isinstance(pos, int):
        return "somewhere in the body"
    text = body.decode("utf-8", errors="replace")[:pos]
    line = text.count("\n") + 1
    column = pos - (text.rfind("\n") + 1) + 1
    return f"line {line}, column {column}"


def _json_reason(ctx: object) -> str:
    # json.JSONDecodeError's own words ("Expecting value: line 1 column 2 (char 1)"), less
    # the position we state ourselves, and lower-cased to sit inside our sentence.
    raw = str(ctx.get("error", "")) if isinstance(ctx, dict) else ""
    reason = raw.split(":", 1)[0].strip() or "invalid JSON"
    return reason[0].lower() + reason[1:]


async def _invalid_json(request: Request, error: dict[str, Any]) -> JSONResponse:
    loc = error.get("loc", ())
    pos = loc[1] if len(loc) > 1 else None
    where = _json_position(await request.body(), pos)
    reason = _json_reason(error.get("ctx"))
    message = f"the request body is not valid JSON: {reason} at {where}"
    return error_response(400, "invalid_json", message)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    for error in exc.errors():
        if error.get("type") == "json_invalid":
            return await _invalid_json(request, error)
    message, issues = _describe(list(exc.errors()))
    return error_response(400, "bad_request", message, issues=issues)


async def _starlette_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _CODES.get(exc.status_code, "error")
    detail = exc.detail if isinstance(exc.detail, str) else None
    if exc.status_code == 404:
        detail = f"no route {request.method} {request.url.path}"
    elif exc.status_code == 405:
        detail = f"method {request.method} not allowed on {request.url.path}"
    response = error_response(exc.status_code, code, detail)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return error_response(404, "session_not_found", str(exc) or "unknown session")


async def _invalid_id(request: Request, exc: Exception) -> JSONResponse:
    return error_response(400, "bad_request", str(exc))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "internal server error")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(HttpError, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _starlette_error)
    app.add_exception_handler(SessionNotFound, _not_found)
    app.add_exception_handler(InvalidId, _invalid_id)
    app.add_exception_handler(Exception, _unexpected)
