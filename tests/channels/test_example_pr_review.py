"""examples/pr-review as a GitHub PR reviewer: a signed `pull_request.opened` delivery to
`agentkit serve` gets a review comment back through the real client."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.channels.github_payloads import delivery, pull_request
from tests.channels.github_standin import GitHubStandIn
from tests.fixtures.http_server import Served, _env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pr-review"
SECRET = "example-secret"


def test_opened_pr_gets_a_review_comment(tmp_path: Path, github_standin: GitHubStandIn) -> None:
    env = _env(
        {
            "GITHUB_WEBHOOK_SECRET": SECRET,
            "GITHUB_TOKEN": "ghs_example",
            "GITHUB_API_URL": github_standin.url,
            "PR_REVIEW_APPROVERS": "octo-lead",
        }
    )
    served = Served(EXAMPLE, tmp_path / "state", ["--mode", "single"], env).start()
    try:
        payload = pull_request("opened", 21, title="Add retry to the payment client", head="f" * 40)
        body, headers = delivery("pull_request", payload, SECRET)
        r = httpx.post(f"{served.url}/v1/channels/github", content=body, headers=headers)
        assert r.status_code == 200, r.text
        assert r.json()["key"] == "pr:octo/widgets#21"
        deadline = time.monotonic() + 90
        while not github_standin.comments(21):
            assert time.monotonic() < deadline, served.output()
            time.sleep(0.05)
        [comment] = github_standin.comments(21)
        assert comment.headers["authorization"] == "Bearer ghs_example"
        assert comment.body["body"].strip()
    finally:
        served.stop()
