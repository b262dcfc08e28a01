"""`agentkit stream --url BASE --session ID`: print a session's events as NDJSON, following it
across responses that end early.

A stream response can end before the session has settled: a deployed API ends each response
at its window (Lambda answers within a bounded time), and a server can restart. The client
then asks again with `startIndex` = the last index it printed + 1, so nothing is printed
twice and nothing is skipped. Without `--follow` it stops once the session has settled: it
saw `session.waiting`, `session.completed` or `session.failed` and nothing was recorded
after it, or `--start` is just past such an event. With `--follow` it keeps going (a chat
session can always take another message) until the session ends for good or the user
interrupts it.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import httpx

    from agentkit.client import StreamGap

EXIT_REFUSED = 1


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
    """Prints a session's events, each index once, with `agentkit.client` doing the
    following and resuming (the one implementation of it)."""

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
        from agentkit.client import Client  # loads httpx: only when streaming

        self.api = Client(base_url, http=client, stream_retries=retries, stream_window=window)
        self.session = self.api.session(session_id)
        self.start = start
        self.follow = follow
        self.out = out
        self.gaps = 0  # times an index was skipped by the server (reported on stderr)

    @property
    def responses(self) -> int:
        """Stream responses read so far (a deployed API ends one per window)."""
        return self.api.stream_responses

    def run(self) -> int:
        """Print events until the session settles (or ends, with `--follow`); the exit code."""
        from agentkit.client import ApiError, ConnectionLost

        events = self.session.events(
            self.start, follow=True, until_settled=not self.follow, on_gap=self._gap
        )
        try:
            for event in events:
                # `to_line` escapes what UTF-8 cannot carry (lone surrogates) losslessly.
                self.out.write(event.to_line().decode("utf-8"))
                self.out.flush()
        except ApiError as exc:
            print(f"agentkit: the server refused the stream: {exc}", file=sys.stderr)
            return EXIT_REFUSED
        except ConnectionLost as exc:
            print(f"agentkit: {exc}", file=sys.stderr)
            return EXIT_REFUSED
        return 0

    def _gap(self, gap: StreamGap) -> None:
        # The CLI shows what it has and says what is missing, rather than stopping.
        print(
            f"agentkit: events {gap.expected}..{gap.got - 1} are missing from the stream",
            file=sys.stderr,
        )
        self.gaps += 1
