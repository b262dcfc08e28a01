"""The auth matrix: every operation of the served OpenAPI document, three callers each.

- no credentials -> 401 on every route that declares the bearer scheme;
- another principal -> 403 on every route bound to someone else's session (a path
  `session_id`, a chat of theirs, or a body `sessionId`), and on the admin-only dev routes;
- the owner -> the success code the document declares for the route.

The parameters come from the document itself, so a new route joins the matrix on its own;
one this file cannot fill in (a new path parameter, a required body) fails until it is
taught here. Callers are remote bearer principals on the real app (a remote peer address,
so the `--dev` loopback-admin rule does not apply); the admin is a direct loopback client.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from agentkit.hosts.local import LocalHost, LocalHostOptions
from agentkit.project.bundle import AgentBundle
from agentkit.server.app import create_app
from agentkit.server.auth import AuthChain, bearer_principal_id
from agentkit.server.options import ServerOptions
from agentkit.sessions import Principal
from tests.fixtures.http_server import AGENT_FILES, SLUG, write_agent

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALICE, BOB = "alice-matrix-token", "bob-matrix-token"
ALICE_CHAT = "alice-matrix-chat"  # an AI SDK chat of Alice's, for the routes that name one
REMOTE = ("198.51.100.7", 40000)  # a documentation address: never loopback
LOOPBACK = ("127.0.0.1", 40001)
PLACEHOLDER = re.compile(r"\{[a-z_]+\}")
FILES = {
    **AGENT_FILES,
    "evals/hello.eval.py": (
        "from agentkit.evals import define_eval\n\ncase = define_eval(message='hi')\n"
    ),
    "evals/evals.config.py": (
        "from agentkit import define_evals_config\n\n"
        "config = define_evals_config(max_concurrency=1)\n"
    ),
}
# Routes only the local developer may call (docs/auth.md, "Dev mode"): every bearer
# principal gets 403, whoever owns what.
ADMIN_ONLY = {
    ("get", "/v1/dev/schedules"),
    ("post", "/v1/dev/schedules/{schedule_id}"),
    ("get", "/v1/dev/reminders"),
    ("post", "/v1/dev/reminders/{reminder_id}"),
    ("get", "/v1/logs"),  # server logs can name any session
    ("get", "/v1/fleet"),  # the kill switch is the whole agent's
    ("post", "/v1/fleet/pause"),
    ("post", "/v1/fleet/resume"),
}
# Routes that answer in a wire protocol's own shape (an SSE error part), not ours.
PROTOCOL_ROUTES = ("/v1/ai-sdk/", "/v1/ag-ui")
# The body each operation with a required body is sent (`{...}` filled from the world).
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("post", "/v1/session"): {"message": "hello"},
    ("post", "/v1/session/{session_id}"): {"continuationToken": "{token}", "message": "again"},
    ("post", "/v1/session/{session_id}/approvals/{call_id}"): {"decision": "deny"},
    ("post", "/v1/session/{session_id}/fork"): {"atIndex": 0},
    ("post", "/v1/tools/{tool_name}"): {"input": {"city": "Oslo"}, "sessionId": "{session_id}"},
    ("post", "/v1/dev/evals/runs"): {},
    # A thread of the caller's own (created on first use): Bob's run never meets Alice's.
    ("post", "/v1/ag-ui"): {
        "threadId": "matrix-thread",
        "runId": "matrix-run",
        "messages": [{"id": "u1", "role": "user", "content": "hello"}],
    },
    ("post", "/v1/a2a"): {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": "m1",
                "contextId": "matrix-context",
                "role": "ROLE_USER",
                "parts": [{"text": "hello"}],
            },
            "configuration": {"returnImmediately": True},
        },
    },
    ("post", "/v1/ai-sdk/chat"): {
        "id": "matrix-chat",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}],
    },
}


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    """Every operation of the document an app with this agent serves (dev on)."""
    with tempfile.TemporaryDirectory() as tmp:
        bundle = AgentBundle.discover(write_agent(Path(tmp) / SLUG, FILES))
        host = LocalHost(bundle, LocalHostOptions(state_root=Path(tmp) / "state", dev=True))
        document = create_app([host.mount()], _options()).openapi()
    return [
        (method, path, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in {"get", "post", "put", "patch", "delete"}
    ]


def _options() -> ServerOptions:
    auth = AuthChain.from_flags(bearer_tokens=[ALICE, BOB], dev=True)
    return ServerOptions(dev=True, auth=auth)


OPERATIONS = _operations()


@dataclass
class World:
    """Alice's things, fresh for each case: a session parked on an approval, a reminder."""

    host: LocalHost
    app: Any
    session_id: str
    token: str
    call_id: str
    reminder_id: str
    run_id: str

    def client(self, token: str | None, peer: tuple[str, int] = REMOTE) -> httpx.AsyncClient:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        transport = httpx.ASGITransport(app=self.app, client=peer)
        return httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", headers=headers, timeout=60
        )

    def fill(self, text: str) -> str:
        values = {
            "session_id": self.session_id,
            "token": self.token,
            "call_id": self.call_id,
            "tool_name": "get_weather",
            "schedule_id": "digest",
            "reminder_id": self.reminder_id,
            "run_id": self.run_id,
            "page": "auth",
            "chat_id": ALICE_CHAT,
        }
        for name, value in values.items():
            text = text.replace("{" + name + "}", value)
        assert not PLACEHOLDER.search(text), f"teach the auth matrix the parameters of {text}"
        return text


async def _parked_session(alice: httpx.AsyncClient) -> tuple[str, str, str]:
    started = await alice.post(f"/{SLUG}/v1/session", json={"message": "wipe the notes folder"})
    assert started.status_code == 200, started.text
    sid, token = started.json()["sessionId"], started.json()["continuationToken"]
    for _ in range(600):  # the turn runs in the background; it parks on the approval
        pending = (await alice.get(f"/{SLUG}/v1/session/{sid}/approvals")).json()["approvals"]
        if pending:
            return sid, token, pending[0]["callId"]
        r = await alice.get(f"/{SLUG}/v1/session/{sid}/stream", params={"window": 0.1})
        assert '"turn.failed"' not in r.text, r.text
    raise AssertionError("the session never parked on its approval")


async def _world(base: Path, *, eval_run: bool, chat: bool) -> World:
    bundle = AgentBundle.discover(write_agent(base / SLUG, FILES))
    host = LocalHost(bundle, LocalHostOptions(state_root=base / "state", dev=True))
    await host.start()
    app = create_app([host.mount()], _options())
    world = World(host, app, "", "", "", "", "")
    async with world.client(ALICE) as alice:
        world.session_id, world.token, world.call_id = await _parked_session(alice)
        if eval_run:
            run = await alice.post(f"/{SLUG}/v1/dev/evals/runs", json={})
            assert run.status_code == 202, run.text
            world.run_id = run.json()["runId"]
            await _finished(alice, world.run_id)
        if chat:
            user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
            said = await alice.post(
                f"/{SLUG}/v1/ai-sdk/chat", json={"id": ALICE_CHAT, "messages": [user]}
            )
            assert said.status_code == 200, said.text
    reminders = host.reminders
    assert reminders is not None
    reminder = await reminders.create(
        purpose="matrix", channel_id="http", continuation_token=world.token,
        session_id=world.session_id, delay="1h", prompt="ping",
    )  # fmt: skip
    world.reminder_id = reminder.id
    return world


async def _finished(alice: httpx.AsyncClient, run_id: str) -> None:
    """Wait for an eval run to end, so the next one may start (one runs at a time)."""
    for _ in range(1200):
        snap = (await alice.get(f"/{SLUG}/v1/dev/evals/runs/{run_id}")).json()
        if snap["status"] in {"completed", "failed"}:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"eval run {run_id} never ended")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    """One world for the refusals: they must change nothing (asserted), so they can share."""
    world = await _world(tmp_path_factory.mktemp("matrix"), eval_run=True, chat=True)
    yield world
    await world.host.aclose()


@pytest_asyncio.fixture(loop_scope="module")
async def fresh(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    """A world of its own for a case that acts as the owner (it may stop, deny, rotate)."""
    path = request.node.callspec.params["path"]
    world = await _world(tmp_path, eval_run="{run_id}" in path, chat="{chat_id}" in path)
    yield world
    await world.host.aclose()


def _request(world: World, method: str, path: str, op: dict[str, Any]) -> dict[str, Any]:
    suffix = path.removeprefix(f"/{SLUG}")
    kwargs: dict[str, Any] = {"url": world.fill(path)}
    if suffix.endswith("/stream"):
        kwargs["params"] = {"window": 0.2}
    if "requestBody" in op:
        assert (method, suffix) in BODIES, f"teach the auth matrix a body for {method} {path}"
        kwargs["json"] = json.loads(world.fill(json.dumps(BODIES[(method, suffix)])))
    return kwargs


def _success(op: dict[str, Any]) -> set[int]:
    """The success codes the operation documents (a tool call: 200 ran, 202 parked)."""
    codes = {int(c) for c in op["responses"] if c.startswith("2")}
    assert codes, op["responses"]
    return codes


def _session_bound(method: str, path: str) -> bool:
    suffix = path.removeprefix(f"/{SLUG}")
    body = BODIES.get((method, suffix), {})
    return "{session_id}" in path or "{chat_id}" in path or "sessionId" in body


def _ids(ops: list[tuple[str, str, dict[str, Any]]]) -> Iterator[str]:
    return (f"{m.upper()} {p}" for m, p, _ in ops)


SECURED = [o for o in OPERATIONS if o[2].get("security")]
OPEN = [o for o in OPERATIONS if not o[2].get("security")]


async def test_the_matrix_covers_every_route_family() -> None:
    suffixes = {(m, p.removeprefix(f"/{SLUG}")) for m, p, _ in SECURED}
    # A floor, so a document that lost its routes cannot pass by having none to check.
    assert {("post", "/v1/session"), ("get", "/v1/sessions"), *ADMIN_ONLY} <= suffixes
    assert len(SECURED) >= 18


@pytest.mark.parametrize(("method", "path", "op"), SECURED, ids=list(_ids(SECURED)))
async def test_no_credentials_is_401(
    shared: World, method: str, path: str, op: dict[str, Any]
) -> None:
    world = shared
    async with world.client(None) as anonymous:
        r = await anonymous.request(method, **_request(world, method, path, op))
    assert r.status_code == 401, r.text
    assert r.json()["ok"] is False and r.json()["error"] == "unauthorized"


@pytest.mark.parametrize(("method", "path", "op"), SECURED, ids=list(_ids(SECURED)))
async def test_another_principal(shared: World, method: str, path: str, op: dict[str, Any]) -> None:
    world = shared
    async with world.client(BOB) as bob:
        r = await bob.request(method, **_request(world, method, path, op))
    suffix = path.removeprefix(f"/{SLUG}")
    if (method, suffix) in ADMIN_ONLY or _session_bound(method, path):
        assert r.status_code == 403, r.text
        if suffix.startswith(PROTOCOL_ROUTES):
            assert '"type": "error"' in r.text, r.text  # the protocol's own error part
        else:
            assert r.json()["ok"] is False
    else:
        # A route of the caller's own: it succeeds, and shows nothing of Alice's session.
        assert r.status_code in _success(op), r.text
        assert world.session_id not in r.text
    # Whatever Bob did, Alice's approval is still parked: nothing acted for him.
    owner = Principal(bearer_principal_id(ALICE))
    pending = await world.host.mount().service.approvals(world.session_id, principal=owner)
    assert [p.call_id for p in pending] == [world.call_id]


@pytest.mark.parametrize(("method", "path", "op"), SECURED, ids=list(_ids(SECURED)))
async def test_the_owner_gets_the_documented_success(
    fresh: World, method: str, path: str, op: dict[str, Any]
) -> None:
    world = fresh
    suffix = path.removeprefix(f"/{SLUG}")
    # The local developer (`--dev`, direct loopback, no token) owns the admin-only routes; a
    # token always names its own principal, wherever it comes from.
    admin_only = (method, suffix) in ADMIN_ONLY
    peer, token = (LOOPBACK, None) if admin_only else (REMOTE, ALICE)
    async with world.client(token, peer) as caller:
        r = await caller.request(method, **_request(world, method, path, op))
    assert r.status_code in _success(op), r.text


@pytest.mark.parametrize(("method", "path", "op"), OPEN, ids=list(_ids(OPEN)))
async def test_open_routes_answer_without_credentials(
    shared: World, method: str, path: str, op: dict[str, Any]
) -> None:
    world = shared
    async with world.client(None) as anonymous:
        r = await anonymous.request(method, **_request(world, method, path, op))
    assert r.status_code in _success(op), r.text
