# Generated from _async.py by `make unasync`: edit that file, not this one.
"""`Client` and `Session`: the blocking client of one agent's HTTP API (the same
calls as the asyncio client, not awaited).

`_async.py` is the one source of both clients: `_sync.py` is generated from it by
`make unasync` (see `_unasync.py`), and a test fails when the two drift apart.
"""

# Coverage is below 80%: the tests drive the client against a real server; what they
# leave out is convenience (repr, workspace files on send) and the rarer transport failures.

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Generator, Iterable, Iterator
from datetime import datetime
from typing import Any

import httpx

from agentkit.client._config import (
    RETRYABLE_ERRORS,
    Attempts,
    Settings,
    auth_headers,
    check_deadline,
    pause_within,
    server_pause,
    session_path,
    stream_params,
    write_headers,
)
from agentkit.client._errors import ConnectionLost, check, refuse
from agentkit.client._listing import listing_params, page_params
from agentkit.client._models import Accepted, Approval, SessionSummary, ToolCall
from agentkit.client._stream import (
    FINAL,
    SETTLED,
    Cursor,
    GapHandler,
    LineSplitter,
    TurnWatch,
    fresh,
    parse_body,
)
from agentkit.events import Event


class Client:
    """A client of one agent: `base_url` is the agent's root (`http://host:3000/<slug>`, no
    slug under `serve --mode single`); `token` is sent as a bearer token.

    Bring your own `httpx.Client` as `http` (it is not closed here) or a `transport` (a
    test transport, or one that calls an app in process over WSGI). See `Settings` for
    `timeout`, `retries`, `retry_deadline`, `stream_retries` and the backoff.

    Every write (start, send, approve, deny, stop, call_tool) carries an `Idempotency-Key`
    and is retried, with the same key, after a connection error, a read timeout or a
    502/503/504: a server that already acted answers with its first response, so a lost
    answer is invisible.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 2,
        stream_retries: int = 5,
        backoff: float = 0.25,
        backoff_max: float = 5.0,
        stream_window: float | None = None,
        retry_deadline: float = 60.0,
        http: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.settings = Settings(
            timeout, retries, stream_retries, backoff, backoff_max, stream_window, retry_deadline
        )
        self._own = http is None
        self._http = http or httpx.Client(timeout=timeout, transport=transport)
        self._headers = auth_headers(token)
        self.stream_responses = 0  # stream responses read so far (each window is one)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._own:
            self._http.close()

    # ---- requests ------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return self.base_url + path

    def _get(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        """A read: safe to repeat, so retried as `Settings` allows."""
        return self._request("GET", path, self._headers, params=params)

    def _post(self, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        """A write: it carries an idempotency key, the same on each retry, so that the
        server acts once however many tries it takes to hear the answer."""
        return self._request("POST", path, write_headers(self._headers), body=body or {})

    def _request(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
    ) -> httpx.Response:
        attempts = Attempts(self.settings)
        while True:
            try:
                response = self._http.request(
                    method,
                    self._url(path),
                    params=params,
                    json=body,
                    headers=headers,
                    timeout=attempts.timeout(),
                )
            except RETRYABLE_ERRORS as exc:
                pause = attempts.retry_after()
                if pause is None:
                    raise ConnectionLost(
                        f"{method} {path}: {exc!r} (tried {attempts.failures} times)"
                    ) from exc
            else:
                wanted = server_pause(response)
                if wanted is None:
                    return check(response, retried=attempts.failures > 0)
                pause = attempts.retry_after(wanted)
                if pause is None:
                    return check(response, retried=True)
            time.sleep(pause)

    # ---- sessions ------------------------------------------------------------------

    def start(self, message: str, workspace_files: dict[str, str] | None = None) -> Session:
        """Open a chat session with its first message; the turn runs in the background."""
        body: dict[str, Any] = {"message": message}
        if workspace_files is not None:
            body["workspaceFiles"] = workspace_files
        accepted = Accepted.from_json((self._post("/v1/session", body)).json())
        return Session(self, accepted.session_id, accepted.continuation_token, accepted)

    def session(self, session_id: str, continuation_token: str | None = None) -> Session:
        """A handle on an existing session (give the token to send follow-ups)."""
        return Session(self, session_id, continuation_token)

    def sessions(
        self,
        *,
        page_size: int = 50,
        status: str | Iterable[str] | None = None,
        principal: str | None = None,
        min_cost: float | None = None,
        started_after: datetime | str | None = None,
        started_before: datetime | str | None = None,
    ) -> Iterator[SessionSummary]:
        """The caller's sessions, newest first, page after page.

        Filters: `status` (one or several of idle, running, awaiting_approval, completed,
        failed), `principal` (an admin's choice of owner), `min_cost` (dollars so far), and
        `started_after` (inclusive) / `started_before` (exclusive) on the creation time.
        """
        cursor: str | None = None
        query = listing_params(
            page_size=page_size,
            status=status,
            principal=principal,
            min_cost=min_cost,
            started_after=started_after,
            started_before=started_before,
        )
        while True:
            page = (self._get("/v1/sessions", page_params(query, cursor))).json()
            for raw in page.get("sessions", []):
                yield SessionSummary.from_json(raw)
            cursor = page.get("cursor")
            if not cursor:
                return

    def call_tool(
        self, name: str, input: dict[str, Any] | None = None, session_id: str | None = None
    ) -> ToolCall:
        """Run a server tool with no model turn (recorded on `session_id`'s stream if given)."""
        body: dict[str, Any] = {"input": input or {}}
        if session_id is not None:
            body["sessionId"] = session_id
        return ToolCall.from_json((self._post(f"/v1/tools/{name}", body)).json())

    def info(self) -> dict[str, Any]:
        """The manifest snapshot (`GET /v1/info`)."""
        result: dict[str, Any] = (self._get("/v1/info")).json()
        return result

    def abs(self) -> dict[str, Any]:
        """Live A/B metrics (`GET /v1/abs`)."""
        result: dict[str, Any] = (self._get("/v1/abs")).json()
        return result

    # ---- eval runs -----------------------------------------------------------------

    def evals(self) -> dict[str, Any]:
        """The discovered eval cases and config (`GET /v1/dev/evals`)."""
        result: dict[str, Any] = (self._get("/v1/dev/evals")).json()
        return result

    def start_eval_run(
        self, filter_ids: list[str] | None = None, tags: list[str] | None = None
    ) -> dict[str, Any]:
        """Start an eval run; the snapshot it answers with (`id`, `status`, ...)."""
        body: dict[str, Any] = {}
        if filter_ids is not None:
            body["filterIds"] = filter_ids
        if tags is not None:
            body["tags"] = tags
        result: dict[str, Any] = (self._post("/v1/dev/evals/runs", body)).json()
        return result

    def eval_run(self, run_id: str) -> dict[str, Any]:
        """One eval run's snapshot."""
        result: dict[str, Any] = (self._get(f"/v1/dev/evals/runs/{run_id}")).json()
        return result

    def eval_runs(self) -> dict[str, Any]:
        """Recent eval runs, newest first (`{runs, activeRunId?}`)."""
        result: dict[str, Any] = (self._get("/v1/dev/evals/runs")).json()
        return result

    def wait_eval_run(
        self, run_id: str, *, poll: float = 0.5, timeout: float = 600.0
    ) -> dict[str, Any]:
        """Poll an eval run until it is `completed` or `failed`."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.eval_run(run_id)
            if run.get("status") in ("completed", "failed"):
                return run
            if time.monotonic() >= deadline:
                raise TimeoutError(f"eval run {run_id} still {run.get('status')!r}")
            time.sleep(poll)

    # ---- the stream ----------------------------------------------------------------

    def follow(
        self,
        cursor: Cursor,
        *,
        until_settled: bool = False,
        deadline: float | None = None,
    ) -> Generator[Event, None, None]:
        """Events from `cursor.next_index`, across as many responses as it takes. With a
        `deadline` (a `time.monotonic()` value) it raises `TimeoutError` by then, even when
        a response stalls mid-body."""
        path = session_path(cursor.session_id)
        if until_settled and self._settled_before(cursor):
            return
        failures = 0
        while True:
            window = self.settings.window(deadline, cursor.session_id)
            before = cursor.next_index
            try:
                with self._http.stream(
                    "GET",
                    self._url(path + "/stream"),
                    params=stream_params(cursor.next_index, window),
                    headers=self._headers,
                    timeout=self.settings.stream_timeout(
                        window, check_deadline(deadline, cursor.session_id)
                    ),
                ) as response:
                    self.stream_responses += 1
                    if response.status_code != 200:
                        response.read()
                        refuse(response)
                    splitter = LineSplitter()
                    for text in response.iter_text():
                        for event in fresh(splitter.feed(text), cursor):
                            yield event
                            if self._stop(event, cursor, until_settled):
                                return
                        check_deadline(deadline, cursor.session_id)  # bytes, but not ours
                    for event in fresh(splitter.end(), cursor):
                        yield event
                        if self._stop(event, cursor, until_settled):
                            return
            except RETRYABLE_ERRORS as exc:
                check_deadline(deadline, cursor.session_id)  # a read that timed out at it
                failures = 0 if cursor.next_index > before else failures + 1
                if failures > self.settings.stream_retries:
                    raise ConnectionLost(f"lost the stream of {cursor.session_id}: {exc}") from exc
                time.sleep(pause_within(self.settings.delay(failures), deadline))
                continue
            # The server ended the response (its window, a shutdown): resume. One that ended
            # with nothing new waits a moment first, so a server that answers at once (while
            # shutting down, say) is not asked again in a tight loop.
            failures = 0
            if cursor.next_index == before:
                time.sleep(pause_within(self.settings.backoff, deadline))

    def _stop(self, event: Event, cursor: Cursor, until_settled: bool) -> bool:
        if event.type in FINAL:
            return True
        return until_settled and event.type in SETTLED and self._caught_up(cursor)

    def _caught_up(self, cursor: Cursor) -> bool:
        """Whether nothing was recorded after the last event yielded."""
        return not self._recorded_from(cursor.session_id, cursor.next_index)

    def _settled_before(self, cursor: Cursor) -> bool:
        """Whether the session had already settled where `cursor` starts: the event just
        before it settled the session and nothing came after (a reader that starts there
        would otherwise wait for an event that never comes)."""
        if cursor.next_index == 0:
            return False
        path = session_path(cursor.session_id) + "/events"
        response = self._get(path, {"startIndex": cursor.next_index - 1})
        events = parse_body(response.text)
        return len(events) == 1 and events[0].type in SETTLED

    def _recorded_from(self, session_id: str, start_index: int) -> bool:
        """Whether any event is recorded at `start_index` or later."""
        path = session_path(session_id) + "/events"
        return bool((self._get(path, {"startIndex": start_index})).content.strip())

    def dump(self, session_id: str, start_index: int = 0) -> list[Event]:
        """The recorded events from `start_index`, one-shot (no live follow)."""
        path = session_path(session_id) + "/events"
        response = self._get(path, {"startIndex": start_index})
        return parse_body(response.text)


class Session:
    """One conversation. Keeps the rotating continuation token and the turn last started.

    `send` is serialized per object, so two callers sharing one session object never race
    each other into a stale token.
    """

    def __init__(
        self,
        client: Client,
        session_id: str,
        continuation_token: str | None = None,
        accepted: Accepted | None = None,
    ) -> None:
        self.client = client
        self.id = session_id
        self.continuation_token = continuation_token
        self.turn_id = accepted.turn_id if accepted else None
        self.accepted = accepted
        self.next_index = 0  # where `wait()` reads from next
        self._send_lock = threading.Lock()
        self._settled: TurnWatch | None = None  # the last wait that saw its turn end or park

    def __repr__(self) -> str:
        return f"Session({self.id!r}, turn_id={self.turn_id!r})"

    def send(self, message: str, workspace_files: dict[str, str] | None = None) -> Accepted:
        """Send a follow-up (a running turn is interrupted first); rotates the token.

        `StaleToken` when another sender rotated the token first: the message was not
        accepted and is not resent. `SessionBusy` when the running turn did not stop.
        """
        with self._send_lock:
            if self.continuation_token is None:
                raise ValueError(f"session {self.id}: no continuation token to send with")
            body: dict[str, Any] = {
                "continuationToken": self.continuation_token,
                "message": message,
            }
            if workspace_files is not None:
                body["workspaceFiles"] = workspace_files
            raw = (self.client._post(session_path(self.id), body)).json()
            accepted = Accepted.from_json(raw)
            self.continuation_token = accepted.continuation_token
            self.turn_id = accepted.turn_id
            self.accepted = accepted
            return accepted

    def fork(self, at_index: int) -> Session:
        """A new session whose history is a copy of this one's events `0..at_index` (after
        a `session.forked` event). It takes follow-ups and approvals of its own; this one
        is left as it is. The fork has no turn until its first `send` (or decision)."""
        raw = (self.client._post(session_path(self.id) + "/fork", {"atIndex": at_index})).json()
        return Session(self.client, str(raw["sessionId"]), str(raw["continuationToken"]))

    def adopt_token(self, continuation_token: str) -> None:
        """Use a token learned elsewhere (after a `StaleToken`, say)."""
        self.continuation_token = continuation_token

    def stop(self) -> bool:
        """Interrupt the running turn; False when none was running."""
        return bool((self.client._post(session_path(self.id) + "/stop")).json().get("stopped"))

    def events(
        self,
        start_index: int = 0,
        follow: bool = True,
        *,
        until_settled: bool = False,
        on_gap: GapHandler | None = None,
    ) -> Iterator[Event]:
        """The session's events from `start_index`, typed, each index once and in order.

        `follow=True` follows live across dropped connections, server restarts and stream
        windows (resuming at the last index yielded plus one) until the session ends, or,
        with `until_settled`, until it waits for a message with nothing recorded after.
        `follow=False` reads what is recorded now. A skipped index raises `StreamGap`
        unless `on_gap` takes it.
        """
        cursor = Cursor(self.id, start_index, on_gap)
        if not follow:
            for event in self.client.dump(self.id, start_index):
                if cursor.accept(event):
                    yield event
            return
        with contextlib.closing(self.client.follow(cursor, until_settled=until_settled)) as stream:
            for event in stream:
                yield event

    def wait(self, timeout: float | None = None) -> list[Event]:
        """Read on until the last accepted turn ends or parks on an approval; the events
        read (from where the previous `wait` stopped). `TimeoutError` after `timeout`,
        even when the stream stalls.

        Waiting again on a turn already seen to end returns at once with the same events
        (so `wait()` then `reply_text()` is fine); a parked turn is followed again only once
        something was recorded after it (an approval, say)."""
        return (self._settle(timeout)).events

    def reply_text(self, timeout: float | None = None) -> str:
        """Wait for the turn and return its reply; `TurnError` if it failed or parked."""
        return (self._settle(timeout)).reply()

    def _settle(self, timeout: float | None) -> TurnWatch:
        done = self._settled
        # A turn seen to end stays ended; a parked one may have been decided since.
        if (
            done is not None
            and done.turn_id == self.turn_id
            and (not done.parked or not self.client._recorded_from(self.id, self.next_index))
        ):
            return done
        watch = TurnWatch(self.turn_id)
        cursor = Cursor(self.id, self.next_index)
        deadline = None if timeout is None else time.monotonic() + timeout
        # Closed on the way out, so the stream's connection is let go at once.
        with contextlib.closing(self.client.follow(cursor, deadline=deadline)) as stream:
            for event in stream:
                self.next_index = event.index + 1
                if watch.done(event):
                    self._settled = watch
                    break
        return watch

    def pending_approvals(self) -> list[Approval]:
        """Tool calls parked on a human decision."""
        raw = (self.client._get(session_path(self.id) + "/approvals")).json()
        return [Approval.from_json(a) for a in raw.get("approvals", [])]

    def approve(self, call_id: str) -> None:
        """Approve one parked call; the parked turn resumes (`wait()` follows it)."""
        self._decide(call_id, "approve")

    def deny(self, call_id: str) -> None:
        """Deny one parked call; the turn resumes and the model sees the refusal."""
        self._decide(call_id, "deny")

    def _decide(self, call_id: str, decision: str) -> None:
        self._settled = None  # the parked turn resumes: the next wait follows it
        self.client._post(f"{session_path(self.id)}/approvals/{call_id}", {"decision": decision})

    def call_tool(self, name: str, input: dict[str, Any] | None = None) -> ToolCall:
        """Run a server tool inside this session (recorded on its stream)."""
        return self.client.call_tool(name, input, session_id=self.id)
