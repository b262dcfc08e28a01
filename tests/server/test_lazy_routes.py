"""Routes installed from a `DeferredRouter`: built on first use, served and documented as
if they had been declared on the app."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import BaseModel

from agentkit.server.routing import DeferredRouter, LazyRoute, built_routes, install_router


class Greeting(BaseModel):
    text: str


class Problem(BaseModel):
    error: str


PROBLEMS: dict[int | str, dict[str, Any]] = {404: {"model": Problem, "description": "None"}}


def make_app() -> FastAPI:
    router = DeferredRouter(prefix="/a", tags=["greetings"])

    @router.get("/hello/{name}", response_model=Greeting)
    async def hello(name: str) -> dict[str, Any]:
        return {"text": f"hello {name}", "extra": "dropped by the response model"}

    @router.post("/echo")
    async def echo(body: Greeting) -> Greeting:
        return body

    app = FastAPI()
    install_router(app, router, responses=PROBLEMS)
    return app


def lazy_routes(app: FastAPI) -> list[LazyRoute]:
    return [r for r in app.router.routes if isinstance(r, LazyRoute)]


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_only_the_route_a_request_reaches_is_built() -> None:
    app = make_app()
    hello, echo = lazy_routes(app)
    async with client(app) as c:
        r = await c.get("/a/hello/ann")
    assert r.status_code == 200
    assert r.json() == {"text": "hello ann"}  # filtered through the response model
    assert hello._route is not None
    assert echo._route is None


async def test_a_body_is_validated_as_declared() -> None:
    async with client(make_app()) as c:
        ok = await c.post("/a/echo", json={"text": "hi"})
        bad = await c.post("/a/echo", json={"words": "hi"})
    assert ok.json() == {"text": "hi"}
    assert bad.status_code == 422


async def test_a_known_path_with_another_method_is_405() -> None:
    async with client(make_app()) as c:
        r = await c.delete("/a/hello/ann")
    assert r.status_code == 405


def test_the_openapi_document_keeps_the_documented_responses_and_tags() -> None:
    app = make_app()
    doc = get_openapi(title="t", version="1", routes=built_routes(app.routes))
    operation = doc["paths"]["/a/hello/{name}"]["get"]
    assert operation["tags"] == ["greetings"]
    assert operation["responses"]["404"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Problem"
    }
    assert "Problem" in doc["components"]["schemas"]


def test_serving_routes_skip_the_documentation_only_models() -> None:
    app = make_app()
    hello = lazy_routes(app)[0]
    served = hello.route
    documented = built_routes([hello])[0]
    assert isinstance(served, APIRoute) and isinstance(documented, APIRoute)
    assert served.response_fields == {}
    assert set(documented.response_fields) == {404}


def test_url_path_for_names_a_lazy_route() -> None:
    assert make_app().url_path_for("hello", name="bo") == "/a/hello/bo"
