"""The playground on Lambda: the API function answers its page and assets through API
Gateway's `$default` route, from the same app as `agentkit serve`."""

from __future__ import annotations

import copy
from typing import Any

from agentkit.aws.handlers import api
from tests.aws.conftest import FakeContext, Stack, load_event


def get(path: str) -> dict[str, Any]:
    event = copy.deepcopy(load_event("api/health.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["routeKey"] = event["requestContext"]["routeKey"] = "$default"
    event["headers"]["accept"] = "text/html"
    response: dict[str, Any] = api.handler(event, FakeContext())
    return response


def test_the_api_function_serves_the_playground(aws_stack: Stack) -> None:
    page = get("/playground")
    assert page["statusCode"] == 200, page
    assert page["headers"]["content-type"].startswith("text/html")
    assert 'src="playground/assets/app.js"' in page["body"]
    script = get("/playground/assets/stream.js")
    assert script["statusCode"] == 200
    assert script["headers"]["content-type"].startswith("text/javascript")
    assert "startIndex=${this.next}" in script["body"]
    assert get("/playground/assets/missing.js")["statusCode"] == 404
    home = get("/")
    assert home["statusCode"] == 307
    assert home["headers"]["location"].endswith("/playground")
