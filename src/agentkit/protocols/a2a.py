"""A2A (Agent2Agent): a turn's events as one A2A task, in the v1 JSON shapes, and the v0.3
shapes derived from them.

A task is a turn, its id `<sessionId>:<turnId>`; a context is the session. The task is
`submitted` until the turn starts, `working` while it runs, `input-required` while it is
parked on approvals, then `completed`, `failed`, or `canceled` (a stopped turn). Each
assistant message of the turn is one artifact: its deltas are appended as they come, and
its whole text closes it (`append: false`, `lastChunk: true`), so a reader that missed a
chunk ends with the right text. Tool calls and results are `working` status updates whose
message carries them as data parts. Ids come from our event indexes: a replay of the same
events yields the same task.
"""

from __future__ import annotations

from typing import Any

from agentkit.events import Event, EventType
from agentkit.protocols._wire import sse_json

Obj = dict[str, Any]
SUBMITTED = "TASK_STATE_SUBMITTED"
WORKING = "TASK_STATE_WORKING"
COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"
CANCELED = "TASK_STATE_CANCELED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
TERMINAL = frozenset({COMPLETED, FAILED, CANCELED})
# The error a stopped (or superseded) turn ends with (`errors.TurnInterrupted`).
STOPPED = "turn interrupted"
APPROVAL_HINT = (
    "Approval needed. Answer in this task with a data part "
    '{"decision": "approve"} or {"decision": "deny"} (or the text approve / deny).'
)


def task_id(session_id: str, turn_id: str) -> str:
    return f"{session_id}:{turn_id}"


def split_task_id(value: object) -> tuple[str, str] | None:
    """The session and turn a task id names, or None when it is not one of ours."""
    if not isinstance(value, str):
        return None
    session_id, sep, turn_id = value.partition(":")
    return (session_id, turn_id) if sep and session_id and turn_id else None


def sse(message: Obj) -> bytes:
    """One JSON-RPC response as a server-sent event."""
    return f"data: {sse_json(message)}\n\n".encode()


class A2aTask:
    """Folds one turn's events into an A2A task, and yields the stream responses
    (`statusUpdate`, `artifactUpdate`) a streaming reader gets for each of them.

    Events at or before `quiet_through` update the task but emit nothing: a stream that
    continues a turn (after its approvals) is fed from the turn's start.
    """

    def __init__(
        self, context_id: str, session_id: str, turn_id: str, *, quiet_through: int = -1
    ) -> None:
        self.context_id = context_id
        self.session_id = session_id
        self.turn_id = turn_id
        self.id = task_id(session_id, turn_id)
        self.quiet_through = quiet_through
        self.state = SUBMITTED
        self.at: str | None = None
        self.status_message: Obj | None = None
        self.user_text: str | None = None
        self.artifacts: dict[str, str] = {}
        self.open_artifact: str | None = None
        self.approvals: list[Obj] = []
        self.done = False

    @property
    def ended(self) -> bool:
        """The turn is over, or parked: a stream of it ends here."""
        return self.state in TERMINAL or self.state == INPUT_REQUIRED

    def feed(self, event: Event) -> list[Obj]:
        """The stream responses for one of our events (none for another turn's)."""
        if self.done or event.turn_id != self.turn_id:
            return []
        out = self._translate(event)
        if self.ended and event.index > self.quiet_through:
            self.done = True
        return out if event.index > self.quiet_through else []

    def task(self, history_length: int | None = None) -> Obj:
        """The task as it stands (`GetTask`, and the first response of a stream)."""
        history = []
        if self.user_text is not None:
            history.append(
                {
                    "messageId": f"{self.turn_id}-user",
                    "contextId": self.context_id,
                    "taskId": self.id,
                    "role": "ROLE_USER",
                    "parts": [{"text": self.user_text}],
                }
            )
        if history_length is not None:
            history = history[-history_length:] if history_length > 0 else []
        out: Obj = {
            "id": self.id,
            "contextId": self.context_id,
            "status": self._status(),
            "metadata": {"agentkit": {"sessionId": self.session_id, "turnId": self.turn_id}},
        }
        if self.artifacts:
            out["artifacts"] = [_artifact(aid, text) for aid, text in self.artifacts.items()]
        if history:
            out["history"] = history
        return out

    def _status(self) -> Obj:
        status: Obj = {"state": self.state}
        if self.at:
            status["timestamp"] = self.at
        if self.status_message is not None:
            status["message"] = self.status_message
        return status

    def _update(self, state: str, ev: Event, parts: list[Obj] | None = None) -> list[Obj]:
        self.state, self.at = state, ev.at
        self.status_message = self._message(ev, parts) if parts else None
        update = {"taskId": self.id, "contextId": self.context_id, "status": self._status()}
        return [{"statusUpdate": update}]

    def _message(self, ev: Event, parts: list[Obj]) -> Obj:
        return {
            "messageId": f"{self.turn_id}-{ev.index}",
            "contextId": self.context_id,
            "taskId": self.id,
            "role": "ROLE_AGENT",
            "parts": parts,
        }

    def _translate(self, ev: Event) -> list[Obj]:  # noqa: C901 - one branch per event type
        t, d = ev.type, ev.data
        if t == EventType.MESSAGE_RECEIVED:
            self.user_text, self.at = str(d.get("message") or ""), ev.at
            return []
        if t in (EventType.TURN_STARTED, EventType.STEP_STARTED):
            return self._update(WORKING, ev) if self.state == SUBMITTED else []
        if t == EventType.ACTION_APPROVAL_RESOLVED:
            self.approvals = [a for a in self.approvals if a["callId"] != d.get("callId")]
            if self.state == INPUT_REQUIRED and not self.approvals:
                return self._update(WORKING, ev)
            return []
        if t == EventType.MESSAGE_APPENDED:
            return self._chunk(ev, str(d.get("text") or ""))
        if t == EventType.MESSAGE_COMPLETED:
            return self._close(ev, str(d.get("text") or ""))
        if t == EventType.ACTIONS_REQUESTED:
            calls = [
                {k: a.get(k) for k in ("callId", "toolName", "arguments")}
                for a in d.get("actions") or []
            ]
            return self._update(WORKING, ev, [{"data": {"toolCalls": calls}}])
        if t == EventType.ACTION_RESULT:
            keys = ("callId", "toolName", "isError", "result", "error")
            result = {k: d[k] for k in keys if d.get(k) is not None}
            return self._update(WORKING, ev, [{"data": {"toolResult": result}}])
        if t == EventType.ACTION_APPROVAL_REQUESTED:
            self.approvals.append({k: d.get(k) for k in ("callId", "toolName", "arguments")})
            return []
        if t == EventType.STEP_COMPLETED and self.approvals and self.state != INPUT_REQUIRED:
            parts: list[Obj] = [
                {"text": APPROVAL_HINT},
                {"data": {"approvals": list(self.approvals)}},
            ]
            return self._update(INPUT_REQUIRED, ev, parts)
        if t == EventType.TURN_COMPLETED:
            self.approvals = []
            return self._update(COMPLETED, ev)
        if t == EventType.TURN_FAILED:
            error = str(d.get("error") or "turn failed")
            self.approvals = []
            return self._update(CANCELED if error == STOPPED else FAILED, ev, [{"text": error}])
        return []

    def _chunk(self, ev: Event, text: str) -> list[Obj]:
        first = self.open_artifact is None
        if self.open_artifact is None:
            self.open_artifact = f"{self.turn_id}-{ev.index}"
            self.artifacts[self.open_artifact] = ""
        aid = self.open_artifact
        self.artifacts[aid] += text
        return [self._artifact_update(aid, text, append=not first, last=False)]

    def _close(self, ev: Event, text: str) -> list[Obj]:
        aid = self.open_artifact or f"{self.turn_id}-{ev.index}"
        self.open_artifact = None
        self.artifacts[aid] = text
        return [self._artifact_update(aid, text, append=False, last=True)]

    def _artifact_update(self, aid: str, text: str, *, append: bool, last: bool) -> Obj:
        update = {
            "taskId": self.id,
            "contextId": self.context_id,
            "artifact": _artifact(aid, text),
            "append": append,
            "lastChunk": last,
        }
        return {"artifactUpdate": update}


def _artifact(aid: str, text: str) -> Obj:
    return {"artifactId": aid, "name": "response", "parts": [{"text": text}]}


# v0.3: the same objects with `kind` discriminators, lower-case states and roles, and a
# `final` flag on the status update that ends a stream.


def v03_state(state: str) -> str:
    return state.removeprefix("TASK_STATE_").lower().replace("_", "-")


def v03_part(part: Obj) -> Obj:
    if "text" in part:
        return {"kind": "text", "text": part["text"]}
    data = part.get("data")
    return {"kind": "data", "data": data if isinstance(data, dict) else {"value": data}}


def v03_message(message: Obj) -> Obj:
    out = {k: v for k, v in message.items() if k not in ("role", "parts")}
    out["kind"] = "message"
    out["role"] = "user" if message.get("role") == "ROLE_USER" else "agent"
    out["parts"] = [v03_part(p) for p in message.get("parts") or []]
    return out


def v03_status(status: Obj) -> Obj:
    out: Obj = {"state": v03_state(str(status["state"]))}
    if "timestamp" in status:
        out["timestamp"] = status["timestamp"]
    if "message" in status:
        out["message"] = v03_message(status["message"])
    return out


def v03_artifact(artifact: Obj) -> Obj:
    return {**artifact, "parts": [v03_part(p) for p in artifact.get("parts") or []]}


def v03_task(task: Obj) -> Obj:
    out: Obj = {"kind": "task", **task, "status": v03_status(task["status"])}
    if "artifacts" in task:
        out["artifacts"] = [v03_artifact(a) for a in task["artifacts"]]
    if "history" in task:
        out["history"] = [v03_message(m) for m in task["history"]]
    return out


def v03_event(response: Obj) -> Obj:
    """A v1 `StreamResponse` as the v0.3 result it stands for."""
    if "task" in response:
        return v03_task(response["task"])
    if "statusUpdate" in response:
        update = response["statusUpdate"]
        state = str(update["status"]["state"])
        return {
            "kind": "status-update",
            "taskId": update["taskId"],
            "contextId": update["contextId"],
            "status": v03_status(update["status"]),
            "final": state in TERMINAL or state == INPUT_REQUIRED,
        }
    update = response["artifactUpdate"]
    return {
        "kind": "artifact-update",
        "taskId": update["taskId"],
        "contextId": update["contextId"],
        "artifact": v03_artifact(update["artifact"]),
        "append": update["append"],
        "lastChunk": update["lastChunk"],
    }
