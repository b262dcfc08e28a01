"""ApiFunction: the agent's HTTP API behind API Gateway (HTTP API, payload 2.0), via Mangum.

Importing this module loads FastAPI and the app's routes, never uvicorn or a model
provider's SDK; the manifest is read on the first request from the baked build folder.
Streams answer for a bounded window (`AGENTKIT_STREAM_WINDOW`, 25 s by default, inside the
HTTP API's 30 s limit) and then end cleanly; clients resume with `startIndex`.
"""

from __future__ import annotations

from typing import Any

from agentkit.aws import snapstart
from agentkit.aws.handlers._common import host, instrumented, loop

_adapter: Any = None


def _mangum() -> Any:
    global _adapter
    if _adapter is None:
        from mangum import Mangum

        # lifespan off: the app's state outlives invocations; a per-invocation lifespan
        # would mark it shut down after the first request.
        # NDJSON streams are text: sent as is, not base64-encoded.
        _adapter = Mangum(
            host().app(),
            lifespan="off",
            text_mime_types=["application/json", "application/x-ndjson", "text/"],
        )
    return _adapter


@instrumented
def handler(event: dict[str, Any], context: Any) -> Any:
    loop()  # Mangum runs the app on the current event loop
    return _mangum()(event, context)


def reset() -> None:
    """Forget the adapter (tests that install another host)."""
    global _adapter
    _adapter = None


# Under a SnapStart init, build the host and the app now: they go into the snapshot.
snapstart.register(_mangum)
