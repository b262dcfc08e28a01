"""Whether an object is a `Model`: the one check for models built outside agentkit.

A model can come from an agent folder (`define_agent(model=MyModel())`) or from an
installed package's `agentkit.models` entry point. Either way it is duck-typed against the
`Model` protocol, and a person gets told which part is missing instead of a traceback from
the first turn.
"""

from __future__ import annotations

import inspect

from agentkit.models.base import Model

PROTOCOL_HINT = "an `id` string and a `stream(request)` method yielding model chunks"


def model_object_problem(value: object) -> str | None:
    """Why `value` does not implement `Model`, or None when it does."""
    kind = type(value).__name__
    model_id = getattr(value, "id", None)
    if not isinstance(model_id, str) or not model_id.strip():
        return f"{kind} has no `id` string (a Model needs {PROTOCOL_HINT})"
    stream = getattr(value, "stream", None)
    if not callable(stream):
        return f"{kind} has no `stream(request)` method (a Model needs {PROTOCOL_HINT})"
    try:
        inspect.signature(stream).bind(object())
    except TypeError:
        return f"{kind}.stream must take one argument, the request (a Model needs {PROTOCOL_HINT})"
    except ValueError:  # no signature to read (a builtin): trust it
        pass
    return None


def as_model(value: object) -> Model | None:
    """`value` as a `Model` when it implements the protocol, else None."""
    if model_object_problem(value) is not None:
        return None
    model: Model = value  # type: ignore[assignment]  # checked structurally just above
    return model


__all__ = ["PROTOCOL_HINT", "as_model", "model_object_problem"]
