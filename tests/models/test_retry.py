"""The shared retry loop: backoff with jitter, bounded attempts, errors translated."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from agentkit.errors import ModelError
from agentkit.events import Usage
from agentkit.models._retry import RetryPolicy, http_error, retrying
from agentkit.models.base import Finish, ModelChunk, TextDelta
from tests.models.replay import collect


def test_delays_double_up_to_the_cap_and_jitter_scales_them_down_to_half():
    low = RetryPolicy(base_delay=1, max_delay=5, rng=lambda: 0.0)
    high = RetryPolicy(base_delay=1, max_delay=5, rng=lambda: 0.999999)
    assert [low.delay(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 2.5]
    assert [round(high.delay(n), 3) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]


class Flaky:
    """Fails with the given errors, one per attempt, then streams a reply."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.attempts = 0

    async def __call__(self) -> AsyncIterator[ModelChunk]:
        self.attempts += 1
        if self.errors:
            raise self.errors.pop(0)
        yield TextDelta("ok")
        yield Finish("end_turn", Usage())


def translate(exc: Exception) -> ModelError:
    return ModelError(f"translated: {exc}", retryable=isinstance(exc, TimeoutError))


async def test_retryable_failures_are_retried_until_success(sleeps):
    flaky = Flaky(TimeoutError("slow"), ModelError("busy", retryable=True))
    chunks = await collect(retrying(flaky, RetryPolicy(sleep=sleeps), translate))
    assert chunks[0] == TextDelta("ok") and flaky.attempts == 3 and len(sleeps.delays) == 2


async def test_a_non_retryable_failure_is_raised_at_once(sleeps):
    flaky = Flaky(ModelError("bad request"))
    with pytest.raises(ModelError, match="bad request"):
        await collect(retrying(flaky, RetryPolicy(sleep=sleeps), translate))
    assert flaky.attempts == 1 and sleeps.delays == []


async def test_foreign_exceptions_never_leak(sleeps):
    flaky = Flaky(KeyError("oops"))
    with pytest.raises(ModelError, match="translated: 'oops'") as caught:
        await collect(retrying(flaky, RetryPolicy(sleep=sleeps), translate))
    assert isinstance(caught.value.__cause__, KeyError)


async def test_attempts_are_bounded(sleeps):
    flaky = Flaky(*[ModelError("busy", retryable=True, status=503)] * 5)
    with pytest.raises(ModelError, match="Gave up after 2 attempts") as caught:
        await collect(retrying(flaky, RetryPolicy(max_attempts=2, sleep=sleeps), translate))
    assert flaky.attempts == 2 and caught.value.status == 503 and caught.value.retryable


@pytest.mark.parametrize(
    ("status", "detail", "expected", "retryable"),
    [
        (400, "prompt is too long", "conversation is too long", False),
        (413, "request too large", "conversation is too long", False),
        (400, "messages: unexpected role", "rejected the request", False),
        (401, "bad key", "set THE_KEY", False),
        (403, "no access", "denied access to model 'm'", False),
        (404, "no such model", "check the model id", False),
        (429, "slow down", "rate limiting", True),
        (408, "timeout", "timed out", True),
        (500, "oops", "unavailable or overloaded", True),
        (529, "Overloaded", "unavailable or overloaded", True),
    ],
)
def test_http_errors_read_as_actions(status, detail, expected, retryable):
    error = http_error("Acme", status, detail, model="m", credentials_hint="set THE_KEY")
    assert expected in str(error) and detail in str(error)
    assert error.retryable is retryable and error.status == status
