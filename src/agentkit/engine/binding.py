"""`agent.bound`: which runtime a session was first bound to, and where to find it again.

Recorded once per session, in the same append as its `session.started` and first
`message.received`. A hook that keeps a mapping of its own (a pull request to the agent and
session that reviews it) reads it from this event.
"""

from __future__ import annotations

import os

from agentkit.events import AgentBound
from agentkit.project.manifest import Manifest


def runtime_kind() -> str:
    """`lambda` inside an AWS Lambda function (the variable Lambda sets), else `local`."""
    return "lambda" if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") else "local"


def agent_bound(manifest: Manifest, session_id: str) -> AgentBound:
    """The `agent.bound` payload of a new session of `manifest`'s agent.

    The URLs are paths under the agent's base URL (the server's root for a single agent,
    `/<slug>` on a multi-agent host): the host's address is the caller's to know.
    """
    session = f"/v1/session/{session_id}"
    return AgentBound(
        agent_id=manifest.agent.slug,
        model=manifest.agent.model,
        runtime=runtime_kind(),
        function_name=os.environ.get("AWS_LAMBDA_FUNCTION_NAME") or None,
        url=session,
        urls={
            "session": session,
            "stream": f"{session}/stream",
            "events": f"{session}/events",
            "playground": f"/playground?sessionId={session_id}",
        },
    )
