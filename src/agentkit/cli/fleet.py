"""Fleet control from a terminal, over the HTTP API of a served or deployed agent:

- `agentkit sessions list|pause|resume|kill --url URL [--token T]`: list sessions (with
  the listing's filters), pause, resume or kill one;
- `agentkit pause-all` / `agentkit resume-all --url URL --token T` (an admin's token): the
  agent's kill switch.

Each prints the server's JSON answer on stdout; an error answer goes to stderr as
`agentkit: <status> <code>: <message>` and the command exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

EXIT_REFUSED = 1

EXAMPLES = """\
agentkit sessions list --url http://127.0.0.1:3000/weather --status running
agentkit sessions pause --url https://.../ --token $TOKEN ses_...
agentkit pause-all --url https://.../ --token $ADMIN_TOKEN
agentkit resume-all --url https://.../ --token $ADMIN_TOKEN
"""

# Listing filters: the option, the query parameter it is sent as.
FILTERS = (
    ("status", "status"),
    ("principal", "principal"),
    ("min_cost", "minCost"),
    ("started_after", "startedAfter"),
    ("started_before", "startedBefore"),
    ("limit", "limit"),
    ("cursor", "cursor"),
)


def _connection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        required=True,
        help="the agent's base URL, such as http://127.0.0.1:3000/<slug>",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("AGENTKIT_TOKEN"),
        help="a bearer token (default: $AGENTKIT_TOKEN); not needed on loopback in dev",
    )


def register(subparsers: Any) -> None:
    sessions: argparse.ArgumentParser = subparsers.add_parser(
        "sessions",
        help="list, pause, resume or kill sessions over the API",
        description="List an agent's sessions, or pause, resume or kill one of them.",
    )
    actions = sessions.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="list sessions, newest first")
    _connection(listing)
    listing.add_argument("--status", help="only sessions with this status (e.g. running)")
    listing.add_argument("--principal", help="only this principal's sessions (admin)")
    listing.add_argument("--min-cost", type=float, help="only sessions that cost at least USD")
    listing.add_argument("--started-after", help="only sessions started after (ISO 8601)")
    listing.add_argument("--started-before", help="only sessions started before (ISO 8601)")
    listing.add_argument("--limit", type=int, help="sessions per page (1-200)")
    listing.add_argument("--cursor", help="the cursor of the previous page")
    listing.set_defaults(func=_list)
    for action, text in (
        ("pause", "pause a session: its turn stops at the next step"),
        ("resume", "let a paused session take messages again"),
        ("kill", "end a session for good"),
    ):
        one = actions.add_parser(action, help=text)
        _connection(one)
        one.add_argument("session", help="the session id (ses_...)")
        one.set_defaults(func=_session_action, verb=action)
    for name, on, text in (
        ("pause-all", True, "turn the agent's kill switch on: every session stops (admin)"),
        ("resume-all", False, "lift the agent's kill switch (admin)"),
    ):
        switch = subparsers.add_parser(name, help=text, description=text)
        _connection(switch)
        switch.set_defaults(func=_switch, on=on)


def _request(args: argparse.Namespace, method: str, path: str, **kw: Any) -> int:
    import httpx

    headers = {"authorization": f"Bearer {args.token}"} if args.token else {}
    url = args.url.rstrip("/") + path
    try:
        answer = httpx.request(method, url, headers=headers, timeout=60.0, **kw)
    except httpx.HTTPError as exc:
        print(f"agentkit: cannot reach {url}: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    try:
        body = answer.json()
    except ValueError:
        body = {"message": answer.text[:200]}  # not JSON: shown as it came
    if answer.status_code >= 400:
        code = body.get("error", "error") if isinstance(body, dict) else "error"
        message = body.get("message", "") if isinstance(body, dict) else ""
        print(f"agentkit: {answer.status_code} {code}: {message}", file=sys.stderr)
        return EXIT_REFUSED
    json.dump(body, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _list(args: argparse.Namespace) -> int:
    params = {
        query: str(getattr(args, option))
        for option, query in FILTERS
        if getattr(args, option) is not None
    }
    return _request(args, "GET", "/v1/sessions", params=params)


def _session_action(args: argparse.Namespace) -> int:
    return _request(args, "POST", f"/v1/session/{args.session}/{args.verb}")


def _switch(args: argparse.Namespace) -> int:
    return _request(args, "POST", "/v1/fleet/pause" if args.on else "/v1/fleet/resume")
