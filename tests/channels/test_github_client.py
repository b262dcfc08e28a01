"""The GitHub client's retry rules and the signature check, with an injected clock."""

from __future__ import annotations

import httpx
import pytest

from agentkit.channels.github import GitHubClient, GitHubError, sign, verify


def client_with(
    answers: list[httpx.Response], seen: list[httpx.Request]
) -> tuple[GitHubClient, list[float]]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    client = GitHubClient(
        "tok", "http://github.test/api/v3", sleep=sleep, transport=httpx.MockTransport(handler)
    )
    return client, slept


async def test_rate_limits_and_5xx_are_retried_with_backoff() -> None:
    seen: list[httpx.Request] = []
    answers = [
        httpx.Response(429, headers={"retry-after": "7"}),
        httpx.Response(403, headers={"x-ratelimit-remaining": "0"}),
        httpx.Response(502),
        httpx.Response(201, json={"id": 9}),
    ]
    client, slept = client_with(answers, seen)
    assert await client.comment("o", "r", 3, "hi") == {"id": 9}
    assert slept == [7.0, 2.0, 4.0]
    assert all(r.url.path == "/api/v3/repos/o/r/issues/3/comments" for r in seen)
    assert seen[0].headers["authorization"] == "Bearer tok"


async def test_other_errors_fail_at_once_and_retries_run_out() -> None:
    seen: list[httpx.Request] = []
    client, slept = client_with([httpx.Response(404, json={"message": "Not Found"})], seen)
    with pytest.raises(GitHubError) as err:
        await client.get_pr("o", "r", 1)
    assert err.value.status == 404 and slept == [] and len(seen) == 1
    # A plain 403 (no rate limit) is a permission problem: not retried.
    client, slept = client_with([httpx.Response(403)], seen)
    with pytest.raises(GitHubError):
        await client.get_pr("o", "r", 1)
    assert slept == []
    client, slept = client_with([httpx.Response(500)] * 4, seen)
    with pytest.raises(GitHubError) as err:
        await client.comment("o", "r", 1, "x")
    assert err.value.status == 500 and slept == [1.0, 2.0, 4.0]


def test_signature_verification() -> None:
    body = b'{"zen":"Design for failure."}'
    good = sign("s3cret", body)
    assert good.startswith("sha256=") and verify("s3cret", body, good)
    assert not verify("s3cret", body + b" ", good)
    assert not verify("other", body, good)
    assert not verify("s3cret", body, None)
    assert not verify("s3cret", body, good.replace("sha256=", "sha1="))
    assert not verify("s3cret", body, good.upper())
    assert not verify("s3cret", body, "sha256=" + "é" * 64)


def test_signature_matches_githubs_published_example() -> None:
    # The example in GitHub's guide to validating webhook deliveries.
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign("It's a Secret to Everybody", b"Hello, World!") == expected
    assert verify("It's a Secret to Everybody", b"Hello, World!", expected)
