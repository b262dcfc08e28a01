"""The Slack and GitHub API calls carry the current trace context out: a call made inside a
span reaches the stand-in with a `traceparent` of that span's trace, and with tracing off no
`traceparent` is sent. The provider is the test's own, installed only for the test (the API's
global is restored after it), so this process stays untraced."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentkit.channels.github import GitHubClient
from agentkit.channels.slack import SlackWebClient
from agentkit.channels.slack.api import call
from tests.channels.github_standin import GitHubStandIn
from tests.channels.slack_standin import SlackStandIn


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)  # what `telemetry.enabled` reads
    yield provider
    provider.shutdown()


def trace_id_of(traceparent: str) -> str:
    version, trace_id, _span_id, _flags = traceparent.split("-")
    assert version == "00"
    return trace_id


async def post_to_slack(slack: SlackStandIn) -> None:
    client = SlackWebClient(token="xoxb-trace-token", api_url=slack.url, retries=0)
    assert await call(client, "chat.postMessage", channel="C1", text="hi") is not None
    await client.chat_postMessage(channel="C1", text="again")  # an SDK method, not `call`


def test_slack_calls_carry_the_spans_traceparent(
    provider: TracerProvider, slack_standin: SlackStandIn
) -> None:
    with provider.get_tracer("test").start_as_current_span("turn") as span:
        asyncio.run(post_to_slack(slack_standin))
    trace_id = format(span.get_span_context().trace_id, "032x")
    posts = slack_standin.posts()
    assert len(posts) == 2
    assert [trace_id_of(p.headers["traceparent"]) for p in posts] == [trace_id, trace_id]
    assert all(p.headers["authorization"] == "Bearer xoxb-trace-token" for p in posts)


def test_slack_calls_send_no_traceparent_with_tracing_off(slack_standin: SlackStandIn) -> None:
    assert trace._TRACER_PROVIDER is None
    asyncio.run(post_to_slack(slack_standin))
    posts = slack_standin.posts()
    assert len(posts) == 2
    assert all("traceparent" not in p.headers for p in posts)


async def comment_on_github(github: GitHubStandIn) -> None:
    client = GitHubClient("ghs_trace", github.url, retries=0)
    await client.comment("o", "r", 3, "hi")


def test_github_calls_carry_the_spans_traceparent(
    provider: TracerProvider, github_standin: GitHubStandIn
) -> None:
    with provider.get_tracer("test").start_as_current_span("turn") as span:
        asyncio.run(comment_on_github(github_standin))
    [sent] = github_standin.requests
    assert trace_id_of(sent.headers["traceparent"]) == format(
        span.get_span_context().trace_id, "032x"
    )
    assert sent.headers["authorization"] == "Bearer ghs_trace"


def test_github_calls_send_no_traceparent_with_tracing_off(github_standin: GitHubStandIn) -> None:
    assert trace._TRACER_PROVIDER is None
    asyncio.run(comment_on_github(github_standin))
    [sent] = github_standin.requests
    assert "traceparent" not in sent.headers
