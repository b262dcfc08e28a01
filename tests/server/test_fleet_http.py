"""Fleet control over HTTP against `agentkit serve`: pause, resume and kill a session (owner
or admin only), and the agent's kill switch, through the routes and the CLI that calls
them. Bearer tokens, so one caller is not another."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentkit.cli import main
from tests.fixtures.http_server import SLUG, Served, serve_in
from tests.server.helpers import dump, of_type, read_stream, turn_ends

pytestmark = pytest.mark.slow(reason="starts agentkit serve with bearer tokens")

ALICE, BOB, OPS = "alice-token-1", "bob-token-2", "ops-admin-token-3"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    base = tmp_path_factory.mktemp("fleet")
    server = serve_in(
        base,
        "--no-docs", "--no-playground", "--no-schedules",
        "--bearer-token", ALICE, "--bearer-token", BOB, "--admin-token", OPS,
    )  # fmt: skip
    yield server
    server.stop()
    assert "Traceback" not in server.output(), server.output()


def client(token: str) -> httpx.Client:
    return httpx.Client(headers={"authorization": f"Bearer {token}"}, timeout=30)


def idle_session(c: httpx.Client, url: str) -> tuple[str, str]:
    r = c.post(f"{url}/v1/session", json={"message": "hello"})
    assert r.status_code == 200, r.text
    sid, token = r.json()["sessionId"], r.json()["continuationToken"]
    read_stream(c, url, sid, until=turn_ends())
    return sid, token


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_owner_pauses_and_resumes_and_a_stranger_gets_403(served: Served) -> None:
    url = served.url
    with client(ALICE) as alice, client(BOB) as bob:
        sid, token = idle_session(alice, url)
        refused = bob.post(f"{url}/v1/session/{sid}/pause")
        assert refused.status_code == 403
        assert refused.json()["ok"] is False and refused.json()["error"] == "forbidden"

        key = {"Idempotency-Key": str(uuid.uuid4())}
        paused = alice.post(f"{url}/v1/session/{sid}/pause", headers=key)
        assert paused.status_code == 200, paused.text
        assert paused.json() == {"ok": True, "sessionId": sid, "status": "paused", "changed": True}
        replayed = alice.post(f"{url}/v1/session/{sid}/pause", headers=key)
        assert replayed.headers["idempotent-replayed"] == "true"
        again = alice.post(f"{url}/v1/session/{sid}/pause")
        assert again.json()["changed"] is False
        assert [e["type"] for e in dump(alice, url, sid)].count("session.paused") == 1

        follow = alice.post(
            f"{url}/v1/session/{sid}", json={"continuationToken": token, "message": "hi"}
        )
        assert follow.status_code == 409
        assert follow.json()["error"] == "session_paused"

        resumed = alice.post(f"{url}/v1/session/{sid}/resume")
        assert resumed.json()["status"] == "running"
        follow = alice.post(
            f"{url}/v1/session/{sid}", json={"continuationToken": token, "message": "hi"}
        )
        assert follow.status_code == 200, follow.text


def test_kill_ends_the_stream_and_nothing_resumes_it(served: Served) -> None:
    url = served.url
    with client(ALICE) as alice, client(OPS) as ops:
        sid, _ = idle_session(alice, url)
        killed = ops.post(f"{url}/v1/session/{sid}/kill")  # an admin may
        assert killed.status_code == 200, killed.text
        assert killed.json()["status"] == "killed"
        events = read_stream(alice, url, sid, until=of_type("session.failed"))
        assert events[-1]["type"] == "session.failed"
        assert events[-1]["data"]["reason"] == "killed"
        resume = alice.post(f"{url}/v1/session/{sid}/resume")
        assert resume.status_code == 409
        assert resume.json()["error"] == "session_killed"


def test_unknown_session_is_404(served: Served) -> None:
    with client(ALICE) as alice:
        r = alice.post(f"{served.url}/v1/session/ses_nope/pause")
    assert r.status_code == 404 and r.json()["error"] == "session_not_found"


def test_the_kill_switch_from_the_cli(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    url = served.url
    code, _, err = cli(capsys, "pause-all", "--url", url, "--token", ALICE)
    assert code == 1 and "403 forbidden" in err  # only an admin flips it

    code, out, _ = cli(capsys, "pause-all", "--url", url, "--token", OPS)
    assert code == 0 and json.loads(out)["paused"] is True
    switch_file = Path(served.state_root) / SLUG / "paused"
    assert switch_file.exists()  # the same switch an operator can create by hand
    with client(ALICE) as alice:
        refused = alice.post(f"{url}/v1/session", json={"message": "hello"})
        assert refused.status_code == 503
        assert refused.json()["error"] == "agent_paused"
        assert refused.headers["retry-after"] == "30"

        code, out, _ = cli(capsys, "resume-all", "--url", url, "--token", OPS)
        assert code == 0 and json.loads(out)["paused"] is False
        assert not switch_file.exists()
        assert alice.post(f"{url}/v1/session", json={"message": "hello"}).status_code == 200


def test_sessions_commands_from_the_cli(served: Served, capsys: pytest.CaptureFixture[str]) -> None:
    url = served.url
    with client(ALICE) as alice:
        sid, _ = idle_session(alice, url)
    code, out, _ = cli(capsys, "sessions", "pause", "--url", url, "--token", ALICE, sid)
    assert code == 0 and json.loads(out)["status"] == "paused"
    code, out, _ = cli(capsys, "sessions", "resume", "--url", url, "--token", ALICE, sid)
    assert code == 0 and json.loads(out)["status"] == "running"
    code, out, _ = cli(capsys, "sessions", "list", "--url", url, "--token", ALICE, "--limit", "200")
    assert code == 0 and sid in [s["sessionId"] for s in json.loads(out)["sessions"]]
    code, _, err = cli(capsys, "sessions", "kill", "--url", url, "--token", BOB, sid)
    assert code == 1 and "403" in err
