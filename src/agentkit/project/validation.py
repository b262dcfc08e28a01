"""Checks on names, model ids and cron expressions used by discovery."""

from __future__ import annotations

import re

from agentkit.authoring.tools import BUILTIN_TOOL_NAMES
from agentkit.cron.eventbridge import cron_translation_error, eventbridge_alternative
from agentkit.cron.standard import validate_cron
from agentkit.errors import ModelError
from agentkit.models import PROVIDERS as MODEL_PROVIDERS
from agentkit.models import parse_model_id

SLUG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
RESERVED_SLUGS = frozenset({"v1", "playground", "docs"})
# Tool names go to model providers, which accept at most this.
TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
BUILTIN_TOOLS = BUILTIN_TOOL_NAMES
# The runtime resolves exactly these; an id naming another provider could never run.
PROVIDERS = tuple(MODEL_PROVIDERS)


def slug_problem(slug: str) -> str | None:
    """Why `slug` cannot name an agent in URLs, or None when it can."""
    if not SLUG_RE.match(slug):
        return f"{slug!r} must match [A-Za-z0-9][A-Za-z0-9_-]*"
    if slug in RESERVED_SLUGS:
        return f"{slug!r} is reserved (v1, playground and docs are URL segments)"
    return None


def model_problem(model_id: object) -> str | None:
    """Why `model_id` is not a `provider:model` id we can run, or None.

    The rule is `parse_model_id`'s, the one `resolve_model` applies, so an id that passes
    here is one that resolves: the provider matches case-insensitively, and the bare `test`
    takes no model name. A blank id is refused here although the runtime would fall back to
    `AGENTKIT_MODEL`: written in an agent folder, it is a mistake.
    """
    if not isinstance(model_id, str):
        return f"model must be a string like 'anthropic:claude-sonnet-4-5', not {model_id!r}"
    if not model_id.strip():
        return (
            f"model {model_id!r} must look like provider:model (providers: {', '.join(PROVIDERS)})"
        )
    try:
        parse_model_id(model_id)
    except ModelError as exc:
        return str(exc)
    return None


def cron_problem(expr: object) -> str | None:
    """Why `expr` is not a valid 5-field UTC cron expression, or None."""
    return validate_cron(expr)


def cron_aws_problem(expr: str) -> str | None:
    """Why a locally valid `expr` cannot be deployed to EventBridge Scheduler, with what to
    write instead when there is a translatable alternative; None when it deploys."""
    problem = cron_translation_error(expr)
    if problem is None:
        return None
    alternative = eventbridge_alternative(expr)
    advice = f"; instead use {alternative}" if alternative else ""
    return f"runs locally but not on AWS: {problem.rstrip('.')}{advice}"
