"""`agentkit stream --url BASE --session ID`: print a session's events as NDJSON, following it
across responses that end early.

A stream response can end before the session has settled: a deployed API ends each response
at its window (Lambda answers within a bounded time), and a server can restart. The client
then asks again with `startIndex` = the last index it printed + 1, so nothing is printed
twice and nothing is skipped. Without `--follow` it stops once the session has settled: it
saw `session.waiting`, `session.completed` or `session.failed` and nothing was recorded
after it. With `--follow` it keeps going (a chat session can always take another message)
until the session ends for good or the user interrupts it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import httpx

SETTLED = frozenset({"session.waiting", "session.completed", "session.failed"})
FINAL = frozenset({"session.completed", "session.failed"})  # nothing can follow these
EXIT_REFUSED = 1
BACKOFF_START = 0.25
BACKOFF_MAX = 5.0


class StreamRefused(Exception):
    """The server answered with an error status (auth, unknown session, bad request)."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            detail = f"{parsed.get('error', 'error')}: {parsed.get('message') or ''}".rstrip(": ")
        else:
            detail = body.decode("utf-8", "replace")[:200]
        super().__init__(f"{status} {detail}")


EXAMPLES = """\
agentkit stream --url http://127.0.0.1:3000/weather --session ses_...
agentkit stream --url http://127.0.0.1:3000/weather --session ses_... --follow
"""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "stream",
        help="print a session's events as NDJSON, resuming where a response ended",
        description=(
            "Follow GET <url>/v1/session/<id>/stream and print one JSON event per line. When "
            "the server ends a response before the session has settled (a deployed API's "
            "stream window, a restart), reconnect from the next index: no event is printed "
            "twice. Stops once the session is settled (session.waiting, session.completed or "
            "session.failed, with nothing after it) unless --follow is given."
        ),
    )
    parser.add_argument(
        "--url",
        required=True,
        help="the agent's base URL, such as http://127.0.0.1:3000/<slug> "
        "(no slug under serve --mode single)",
    )
    parser.add_argument("--session", required=True, help="the session id (ses_...)")
    parser.add_argument(
        "--start", type=int, default=0, help="the first event index to print (default 0)"
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("AGENTKIT_TOKEN"),
        help="a bearer token (default: $AGENTKIT_TOKEN); not needed on loopback in dev",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="keep following after the session settles, until it ends or Ctrl-C",
    )
    parser.add_argument(
        "--window",
        type=float,
        default=None,
        help="ask the server to end each response after this many seconds",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=5,
        help="connection failures in a row tolerated before giving up (default 5)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.start < 0:
        print("agentkit: --start must be 0 or more", file=sys.stderr)
        return 2
    if args.window is not None and args.window <= 0:
        print("agentkit: --window must be a positive number of seconds", file=sys.stderr)
        return 2
    # Imported here: httpx (and the CLI extras it loads when present) would otherwise be
    # paid by every command, `agentkit serve` included.
    import httpx

    headers = {"authorization": f"Bearer {args.token}"} if args.token else {}
    with httpx.Client(headers=headers, timeout=httpx.Timeout(30.0, read=None)) as client:
        follower = StreamFollower(
            client,
            args.url,
            args.session,
            start=args.start,
            window=args.window,
            follow=args.follow,
            retries=args.retries,
            out=sys.stdout,
        )
        try:
            return follower.run()
        except BrokenPipeError:  # the reader went away (`| head`): nothing left to do
            return 0


class StreamFollower:
    """Reads a session's stream response after response, printing each index once."""

    def __init__(
        self,
        client: httpx.Client,
        base_url: str,
        session_id: str,
        *,
        start: int,
        window: float | None,
        follow: bool,
        retries: int,
        out: TextIO,
    ) -> None:
        self.client = client
        self.session_url = f"{base_url.rstrip('/')}/v1/session/{session_id}"
        self.next_index = start
        self.window = window
        self.follow = follow
        self.retries = retries
        self.out = out
        self.responses = 0
        self.gaps = 0  # times an index was skipped by the server (reported on stderr)

    def run(self) -> int:
        """Print events until the session settles (or ends, with `--follow`); the exit code."""
        import httpx

        failures = 0
        while True:
            before = self.next_index
            try:
                if self._read_response():
                    return 0
            except StreamRefused as exc:
                print(f"agentkit: the server refused the stream: {exc}", file=sys.stderr)
                return EXIT_REFUSED
            except httpx.TransportError as exc:
                failures = 0 if self.next_index > before else failures + 1
                if failures > self.retries:
                    print(f"agentkit: lost the stream: {exc}", file=sys.stderr)
                    return EXIT_REFUSED
                time.sleep(min(BACKOFF_MAX, BACKOFF_START * 2 ** max(0, failures - 1)))
                continue
            failures = 0

    def _read_response(self) -> bool:
        """One response from `next_index`; True when done, False to ask again."""
        params: dict[str, Any] = {"startIndex": self.next_index}
        if self.window is not None:
            params["window"] = self.window
        with self.client.stream("GET", f"{self.session_url}/stream", params=params) as response:
            self.responses += 1
            if response.status_code != 200:
                raise StreamRefused(response.status_code, response.read())
            for line in _lines(response):
                event = _parse(line)
                if event is None or event["index"] < self.next_index:
                    continue  # a torn last line, or an index already printed
                if event["index"] > self.next_index:
                    missing = f"{self.next_index}..{event['index'] - 1}"
                    print(
                        f"agentkit: events {missing} are missing from the stream",
                        file=sys.stderr,
                    )
                    self.gaps += 1
                self.out.write(line.strip() + "\n")
                self.out.flush()
                self.next_index = event["index"] + 1
                kind = event.get("type")
                if kind in FINAL:
                    return True
                if kind in SETTLED and not self.follow and self._caught_up():
                    return True
        return False  # the server ended the response (its window, a restart): resume

    def _caught_up(self) -> bool:
        """Whether nothing was recorded after the last printed event."""
        response = self.client.get(
            f"{self.session_url}/events", params={"startIndex": self.next_index}
        )
        if response.status_code != 200:
            raise StreamRefused(response.status_code, response.content)
        return not response.content.strip()


def _lines(response: httpx.Response) -> Iterator[str]:
    """The response's lines, split on "\n" only.

    `iter_lines` would also split at U+2028, U+2029 and U+0085, which may sit raw inside a
    JSON string and are no line ends in NDJSON.
    """
    pending = ""
    for text in response.iter_text():
        pending += text
        *complete, pending = pending.split("\n")
        yield from complete
    if pending:
        yield pending


def _parse(line: str) -> dict[str, Any] | None:
    if not line.strip():
        return None
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("index"), int):
        return None
    return event
