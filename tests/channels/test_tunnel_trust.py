"""A plain TCP forwarder in front of `agentkit serve --bearer-token` makes every outsider a
loopback peer with no forwarding header: none of them may be the local developer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.channels.conftest import (
    assert_no_unexpected_traceback,
    channel_env_in,
    write_channel_project,
)
from tests.channels.github_payloads import delivery, issue_comment, pull_request
from tests.channels.github_standin import GitHubStandIn
from tests.channels.test_github_http import HEAD, SECRET, open_asking_pr, post
from tests.fixtures.http_server import Served, _env
from tests.fixtures.tcp_forwarder import TcpForwarder

TOKEN = "tunnel-test-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def github_api() -> Iterator[GitHubStandIn]:
    server = GitHubStandIn().start()
    yield server
    server.stop()


@pytest.fixture
def standin(github_api: GitHubStandIn) -> GitHubStandIn:
    """The module's GitHub stand-in, with nothing recorded yet."""
    github_api.reset()
    return github_api


@pytest.fixture(scope="module")
def tunnelled(
    tmp_path_factory: pytest.TempPathFactory, github_api: GitHubStandIn
) -> Iterator[Served]:
    """One `--bearer-token` server for the tests that only touch pull requests of their own
    (the fan-out PR 3, the forged approval's PR 4). The `--dev` test starts its own."""
    base = tmp_path_factory.mktemp("tunnel")
    env = _env({**channel_env_in(base), **_github_env(github_api)})
    Path(env["GATE_FILE"]).touch()  # no turn here waits on the gate
    served = Served(write_channel_project(base), base / "state", ["--bearer-token", TOKEN], env)
    yield served.start()
    served.stop()
    assert_no_unexpected_traceback(served)


def _github_env(standin: GitHubStandIn) -> dict[str, str]:
    return {"GITHUB_WEBHOOK_SECRET": SECRET, "GITHUB_API_URL": standin.url}


def _serve(serve_channels: Any, standin: GitHubStandIn, env: dict[str, str], *flags: str) -> Any:
    Path(env["GATE_FILE"]).touch()  # no turn here waits on the gate
    return serve_channels(
        "--bearer-token",
        TOKEN,
        *flags,
        env=_github_env(standin),
    )


def _session_ids(url: str) -> list[str]:
    r = httpx.get(f"{url}/v1/sessions", headers=BEARER, timeout=30)
    assert r.status_code == 200, r.text
    return [s["sessionId"] for s in r.json()["sessions"]]


def test_the_fan_out_route_starts_no_turn_through_a_tunnel(
    tunnelled: Served, standin: GitHubStandIn, forwarder: Callable[[int], TcpForwarder]
) -> None:
    served = tunnelled
    before = _session_ids(served.url)
    tunnel = forwarder(served.port)
    body, headers = delivery("pull_request", pull_request("opened", 3, title="x", head=HEAD), None)
    r = httpx.post(f"{tunnel.url}/v1/webhooks/github", content=body, headers=headers, timeout=30)
    assert r.status_code in (401, 404), r.text
    assert r.json()["ok"] is False
    assert _session_ids(served.url) == before


def test_a_forged_approve_comment_through_a_tunnel_runs_nothing(
    tunnelled: Served, standin: GitHubStandIn, forwarder: Callable[[int], TcpForwarder]
) -> None:
    served = tunnelled
    _, _, call = open_asking_pr(served, standin, 4)
    tunnel = forwarder(served.port)
    forged = issue_comment(4, f"/approve {call}", login="octo-lead", association="OWNER")
    body, headers = delivery("issue_comment", forged, None)
    for path in ("/v1/webhooks/github", f"/{served.url.rsplit('/', 1)[1]}/v1/channels/github"):
        r = httpx.post(tunnel.url + path, content=body, headers=headers, timeout=30)
        assert r.status_code in (401, 404), (path, r.text)
    assert standin.reactions() == []
    # The call is still pending: the real approver's signed comment is what decides it.
    r = post(served.url, "issue_comment", forged)
    assert r.json() == {"ok": True, "callId": call, "decision": "approve"}, r.text


def test_a_bearer_token_through_a_tunnel_is_not_the_local_developer(
    tunnelled: Served, forwarder: Callable[[int], TcpForwarder]
) -> None:
    served = tunnelled
    tunnel = forwarder(served.port)
    slug = served.url.rsplit("/", 1)[1]
    r = httpx.get(f"{tunnel.url}/{slug}/v1/logs", headers=BEARER, timeout=30)
    assert r.status_code == 403, r.text
    assert r.json()["error"] == "logs_local_only"
    # Not directly on loopback either: the token names its principal, wherever it comes from.
    r = httpx.get(f"{served.url}/v1/logs", headers=BEARER, timeout=30)
    assert r.status_code == 403, r.text


def test_under_dev_an_unsigned_fan_out_is_refused_by_the_channel_secret(
    serve_channels: Any, standin: GitHubStandIn, channel_env: dict[str, str]
) -> None:
    served = _serve(serve_channels, standin, channel_env, "--dev")
    body, headers = delivery("pull_request", pull_request("opened", 5, title="x", head=HEAD), None)
    url = f"{served.root_url}/v1/webhooks/github"
    r = httpx.post(url, content=body, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    [one] = r.json()["delivered"]
    assert one["status"] == 401 and one["body"]["ok"] is False
    assert _session_ids(served.url) == []
    # A token holder is not the local developer, even on loopback under --dev.
    r = httpx.post(url, content=body, headers={**headers, **BEARER}, timeout=30)
    assert r.status_code == 403, r.text
