"""The runtime of a stack with a workspace bucket: per-send files also go to S3."""

from __future__ import annotations

from typing import Any

from agentkit.aws.workspace import S3Workspaces
from agentkit.engine.runtime import AgentRuntime


class WorkspaceRuntime(AgentRuntime):
    """`AgentRuntime` whose per-send workspace files are uploaded to the workspace bucket.

    The engine writes them into the local workspace first, which checks them against it;
    the upload then makes them reach TurnFunction, which runs the turn on a copy of the
    bucket's prefix (see `AwsHost.run_turn`). A failed upload fails the request."""

    def __init__(self, *args: Any, workspaces: S3Workspaces, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workspaces = workspaces

    def prepare_workspace(self, session_id: str, files: dict[str, str]) -> None:
        super().prepare_workspace(session_id, files)
        if files:
            self.workspaces.upload_files(session_id, files)
