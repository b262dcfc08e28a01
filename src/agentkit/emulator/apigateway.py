"""API Gateway's HTTP API -> ApiFunction: each request becomes a payload 2.0 event.

What the deployed API enforces is enforced here: a request body over Lambda's 6 MB
synchronous payload is refused (413) before the function runs; an integration that has not
answered within 29 s gets API Gateway's 503 and the environment is stopped; a function error
or a response over 6 MB is API Gateway's 500/502 shape (`{"message": ...}`), not the API's.
The bearer token is checked by ApiFunction itself, as in the deployed `bearer` auth mode
(the route's authorization type is NONE there too).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import secrets
import time
from datetime import UTC, datetime
from typing import Any

from agentkit.emulator.lambda_service import LambdaService
from agentkit.emulator.template import StackShape

log = logging.getLogger("agentkit.emulator.apigateway")

API_ID = "emulated"
FUNCTION = "ApiFunction"
_TEXT_TYPES = ("application/json", "application/x-ndjson", "text/", "application/xml")


def http_api_event(
    *,
    method: str,
    path: str,
    query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    source_ip: str,
    host: str,
) -> dict[str, Any]:
    """The payload 2.0 event of one request (headers joined with commas, cookies apart)."""
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "cookie":
            cookies += [c.strip() for c in value.split(";") if c.strip()]
            continue
        joined[key] = f"{joined[key]},{value}" if key in joined else value
    joined.setdefault("x-forwarded-for", source_ip)
    joined.setdefault("x-forwarded-proto", "http")
    content_type = joined.get("content-type", "")
    is_text = not body or content_type.startswith(_TEXT_TYPES)
    now = datetime.now(UTC)
    route = "GET /v1/health" if method == "GET" and path == "/v1/health" else "$default"
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "rawQueryString": query,
        "headers": joined,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": API_ID,
            "domainName": host,
            "domainPrefix": API_ID,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": secrets.token_urlsafe(12),
            "routeKey": route,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(time.time() * 1000),
        },
        "isBase64Encoded": not is_text,
        "body": body.decode("utf-8", "replace") if is_text else base64.b64encode(body).decode(),
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        from urllib.parse import parse_qsl

        params: dict[str, str] = {}
        for k, v in parse_qsl(query, keep_blank_values=True):
            params[k] = f"{params[k]},{v}" if k in params else v
        event["queryStringParameters"] = params
    return event


def gateway_app(lambdas: LambdaService, shape: StackShape) -> Any:
    """The ASGI app in front of ApiFunction."""
    from starlette.responses import JSONResponse, Response

    limit = shape.max_payload_bytes

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                response: Response = JSONResponse(
                    {"message": "Request Entity Too Large"}, status_code=413
                )
                await response(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        client = scope.get("client") or ("127.0.0.1", 0)
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        event = http_api_event(
            method=scope["method"],
            path=scope["path"],
            query=scope.get("query_string", b"").decode("latin-1"),
            headers=headers,
            body=b"".join(chunks),
            source_ip=client[0],
            host=dict(headers).get("host", "localhost"),
        )
        response = await _integrate(lambdas, event, shape)
        await response(scope, receive, send)

    return app


async def _integrate(lambdas: LambdaService, event: dict[str, Any], shape: StackShape) -> Any:
    from starlette.responses import JSONResponse, Response

    try:
        result = await asyncio.wait_for(lambdas.invoke(FUNCTION, event), shape.integration_timeout)
    except TimeoutError:
        log.warning("ApiFunction did not answer within %.0f s", shape.integration_timeout)
        return JSONResponse({"message": "Service Unavailable"}, status_code=503)
    if not result.ok or not isinstance(result.payload, dict):
        return JSONResponse({"message": "Internal Server Error"}, status_code=500)
    payload = result.payload
    body_text = str(payload.get("body") or "")
    body = base64.b64decode(body_text) if payload.get("isBase64Encoded") else body_text.encode()
    if len(body) > shape.max_payload_bytes:
        log.error("ApiFunction's response is over Lambda's payload limit")
        return JSONResponse({"message": "Internal Server Error"}, status_code=502)
    response = Response(content=body, status_code=int(payload.get("statusCode") or 200))
    for name, value in (payload.get("headers") or {}).items():
        if name.lower() != "content-length":
            response.headers[name] = str(value)
    for name, values in (payload.get("multiValueHeaders") or {}).items():
        for value in values:
            response.headers.append(name, str(value))
    for cookie in payload.get("cookies") or []:
        response.headers.append("set-cookie", str(cookie))
    return response
