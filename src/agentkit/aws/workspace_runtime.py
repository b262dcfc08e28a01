"""The runtime of a stack with a workspace bucket: per-send files also go to S3."""

from __future__ import annotations

from typing import Any

from agentkit.aws.workspace import S3Workspaces
from agentkit.engine.runtime import AgentRuntime
from agentkit.errors import HttpError


class WorkspaceUnavailable(HttpError):
    """The workspace bucket refused or could not take a message's files (503)."""

    status = 503
    code = "workspace_unavailable"


class WorkspaceRuntime(AgentRuntime):
    """`AgentRuntime` whose per-send workspace files are uploaded to the workspace bucket.

    The engine writes them into the local workspace first, which checks them against it;
    the upload then makes them reach TurnFunction, which runs the turn on a copy of the
    bucket's prefix (see `AwsHost.run_turn`). A failed upload fails the request with 503
    `workspace_unavailable`; a new session is then not created."""

    def __init__(self, *args: Any, workspaces: S3Workspaces, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspaces = workspaces

    def prepare_workspace(self, session_id: str, files: dict[str, str]) -> None:
        super().prepare_workspace(session_id, files)
        if not files:
            return
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.workspaces.upload_files(session_id, files)
        except (BotoCoreError, ClientError) as exc:
            raise WorkspaceUnavailable(
                f"the workspace files could not be stored; try again ({type(exc).__name__})"
            ) from None
