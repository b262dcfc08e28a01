"""Routes built on first use, each exactly once.

FastAPI builds a route's request and response fields (pydantic schemas for its body,
parameters and response models) when the route is declared, and an included router's routes
a second time, merged with the including call's settings, on the first request that reaches
that router. On a Lambda cold start all of that lands before the first answer, for ~30
routes of which the request uses one. A `DeferredRouter` only records its declarations;
`install_router` puts a `LazyRoute` for each on the app, which matches paths by regex and
builds the real `APIRoute` the first time a request reaches it (or when the OpenAPI document
is generated, through `built_routes`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match, NoMatchFound, compile_path
from starlette.types import Receive, Scope, Send


class DeferredRouter(APIRouter):
    """An `APIRouter` that records its API routes for `install_router` instead of building
    them. Use it only through `install_router`: `include_router` would see no routes."""

    def __init__(self, *, prefix: str = "", tags: list[str] | None = None) -> None:
        super().__init__(prefix=prefix, tags=list(tags or []))
        self.recorded: list[tuple[str, Callable[..., Any], dict[str, Any]]] = []

    def add_api_route(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        self.recorded.append((path, endpoint, kwargs))


class LazyRoute(BaseRoute):
    """One API route of the app, built by `router.add_api_route` when first matched."""

    def __init__(
        self, router: APIRouter, path: str, endpoint: Callable[..., Any], options: dict[str, Any]
    ) -> None:
        self.path = path
        self.name = options.get("name") or getattr(endpoint, "__name__", "endpoint")
        self.path_regex, self.path_format, _ = compile_path(path)
        self._router = router
        self._endpoint = endpoint
        self._options = options
        self._route: BaseRoute | None = None
        self._documented: BaseRoute | None = None

    def _build(self, options: dict[str, Any]) -> BaseRoute:
        # A shallow copy shares the app router's settings (dependency overrides, default
        # response class...) but collects the new route in a list of its own.
        scratch = copy.copy(self._router)
        scratch.routes = []
        scratch.add_api_route(self.path, self._endpoint, **options)
        return scratch.routes[-1]

    @property
    def route(self) -> BaseRoute:
        """The route that serves requests, built on first use. The models of `responses`
        only document extra statuses, so this one is built without them (each would cost
        a pydantic field, and the first of all loads `pydantic.v1` for FastAPI's check)."""
        if self._route is None:
            responses = self._options.get("responses") or {}
            serving = {
                status: {k: v for k, v in entry.items() if k != "model"}
                for status, entry in responses.items()
            }
            self._route = self._build({**self._options, "responses": serving})
        return self._route

    @property
    def documented(self) -> BaseRoute:
        """The same route with its documented response models, for the OpenAPI document."""
        if self._documented is None:
            self._documented = self._build(self._options)
        return self._documented

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http" or not self.path_regex.match(get_route_path(scope)):
            return Match.NONE, {}
        return self.route.matches(scope)

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        if name != self.name:
            raise NoMatchFound(name, path_params)
        return self.route.url_path_for(name, **path_params)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.route.handle(scope, receive, send)


def built_routes(routes: Iterable[BaseRoute]) -> list[BaseRoute]:
    """`routes` with every `LazyRoute` built as documented (what the OpenAPI generator
    walks)."""
    return [r.documented if isinstance(r, LazyRoute) else r for r in routes]


def install_router(
    app: FastAPI,
    router: APIRouter,
    *,
    responses: Mapping[int | str, dict[str, Any]] | None = None,
) -> None:
    """Add `router`'s routes to `app`, with `responses` documented on each of them (a
    route's own entry for a status wins, as with `include_router`). A `DeferredRouter`'s
    routes are added as `LazyRoute`s, in declaration order; the app's OpenAPI document must
    then be generated over `built_routes(app.routes)`, as `create_app` does."""
    if not isinstance(router, DeferredRouter):
        app.include_router(router, responses=dict(responses or {}))
        return
    for path, endpoint, kwargs in router.recorded:
        options = dict(kwargs)
        options["tags"] = [*router.tags, *(options.get("tags") or [])]
        options["responses"] = {**(responses or {}), **(options.get("responses") or {})}
        app.router.routes.append(LazyRoute(app.router, router.prefix + path, endpoint, options))
    if router.routes:  # anything but API routes (none today) goes the ordinary way
        app.include_router(router, responses=dict(responses or {}))
