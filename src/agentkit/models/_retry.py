"""Retries and error wording shared by the provider adapters.

Each adapter classifies its SDK's exceptions into `ModelError`s (retryable or not) with
`http_error`; `retrying` replays a stream that failed *before* yielding anything, with
exponential backoff and jitter. A stream that already yielded chunks is never replayed:
the caller has recorded those chunks, and a replay would duplicate them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from agentkit.errors import ModelError
from agentkit.models.base import ModelChunk

Sleep = Callable[[float], Awaitable[None]]

_OVERFLOW_MARKERS = (
    "prompt is too long",
    "context length",
    "context_length_exceeded",
    "maximum context",
    "context window",
    "input is too long",
    "too many input tokens",
    "too many tokens",
    "exceeds the context",
)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a provider call is retried.

    The delay before attempt `n + 1` is `min(max_delay, base_delay * 2**(n-1))`, scaled by a
    random factor in [0.5, 1) so that many clients hit by the same outage spread out.
    `sleep` is injectable so tests can observe the delays without waiting.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    sleep: Sleep = field(default=asyncio.sleep)
    rng: Callable[[], float] = field(default=random.random)

    def delay(self, attempt: int) -> float:
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return ceiling * (0.5 + 0.5 * self.rng())


def is_context_overflow(text: str) -> bool:
    """True when a provider's error text says the input does not fit the context window."""
    low = text.lower()
    return any(marker in low for marker in _OVERFLOW_MARKERS)


def http_error(
    provider: str, status: int | None, detail: str, *, model: str, credentials_hint: str
) -> ModelError:
    """A `ModelError` a person can act on, from an HTTP status and the provider's text.

    `credentials_hint` names what to fix for an auth failure (e.g. "set ANTHROPIC_API_KEY").
    """
    said = f" The provider said: {detail}" if detail else ""
    if status == 400 or status == 413 or (status is None and is_context_overflow(detail)):
        if is_context_overflow(detail) or status == 413:
            return ModelError(
                f"The conversation is too long for {provider} model {model!r}: start a new "
                f"session, or send a shorter message or smaller tool results.{said}",
                status=status,
            )
        return ModelError(f"{provider} rejected the request (HTTP 400).{said}", status=status)
    if status == 401:
        return ModelError(
            f"{provider} rejected the credentials (HTTP 401): {credentials_hint}.{said}",
            status=status,
        )
    if status == 403:
        return ModelError(
            f"{provider} denied access to model {model!r} (HTTP 403): check that the "
            f"credentials may use this model ({credentials_hint}).{said}",
            status=status,
        )
    if status == 404:
        return ModelError(
            f"{provider} does not know model {model!r} (HTTP 404): check the model id.{said}",
            status=status,
        )
    if status == 408:
        return ModelError(
            f"{provider} timed out (HTTP 408): try again, or send a shorter request.{said}",
            retryable=True,
            status=status,
        )
    if status == 429:
        return ModelError(
            f"{provider} is rate limiting requests (HTTP 429): wait and try again, or "
            f"ask for a higher quota.{said}",
            retryable=True,
            status=status,
        )
    if status is not None and status >= 500:
        return ModelError(
            f"{provider} is unavailable or overloaded (HTTP {status}): try again later.{said}",
            retryable=True,
            status=status,
        )
    code = f"HTTP {status}" if status is not None else "no status"
    return ModelError(f"{provider} call failed ({code}).{said}", status=status)


def other_error(provider: str, exc: Exception, *, from_sdk: bool) -> ModelError:
    """The error for a failure no more specific rule covers: the SDK's own, or a bug."""
    if from_sdk:
        return ModelError(f"The {provider} call failed: {exc}")
    return ModelError(f"Unexpected failure in the {provider} provider: {exc!r}")


def connection_error(provider: str, where: str, detail: str) -> ModelError:
    """A retryable error for a network failure or timeout."""
    return ModelError(
        f"Could not reach {provider} at {where}: check the network and the base URL ({detail}).",
        retryable=True,
    )


async def retrying(
    open_stream: Callable[[], AsyncIterator[ModelChunk]],
    policy: RetryPolicy,
    translate: Callable[[Exception], ModelError],
) -> AsyncIterator[ModelChunk]:
    """Yield from `open_stream()`, retrying retryable failures that happen before any chunk.

    Every exception is turned into a `ModelError` by `translate` (SDK errors never leak).
    After the last attempt the error is raised with how many attempts were made.
    """
    attempt = 0
    while True:
        attempt += 1
        yielded = False
        try:
            async for chunk in open_stream():
                yielded = True
                yield chunk
            return
        except ModelError as exc:
            error = exc
        except Exception as exc:
            error = translate(exc)
            error.__cause__ = exc
        if yielded or not error.retryable:
            raise error
        if attempt >= policy.max_attempts:
            raise ModelError(
                f"{error} Gave up after {attempt} attempts.",
                retryable=True,
                status=error.status,
            ) from error
        await policy.sleep(policy.delay(attempt))
