"""`agentkit serve`: serve one or more agent folders over HTTP with uvicorn.

Refuses to start while an agent has error diagnostics. On start each agent recovers what a
previous process left mid-turn; on SIGINT/SIGTERM live streams end, connections close, and
turns still running are left for that recovery (see `agentkit.hosts.local`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import ipaddress
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DEFAULT_PORT = 3000


EXAMPLES = """\
agentkit serve --dir .
agentkit serve --dir . --dev                  # reload on changes, hand-run schedules
agentkit serve --dir a --dir b --port 8080    # two agents, under /a/ and /b/
agentkit serve --dir . --host 0.0.0.0 --tokens-file tokens.txt
"""
EXIT_CODES = (
    "0 stopped cleanly (Ctrl-C, SIGTERM), 1 could not start (agent errors,"
    " port in use, state folder busy), 2 usage error"
)


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve agents over HTTP (API, docs, playground)",
        description="Serve one or more agent folders over the agentkit HTTP API.",
    )
    p.add_argument(
        "--dir",
        dest="dirs",
        action="append",
        type=Path,
        metavar="DIR",
        help="an agent project folder (repeat to serve several in multi mode; default .)",
    )
    p.add_argument(
        "--dev",
        action="store_true",
        help="dev mode: reload the agent when agent/ changes; hand-run schedules/reminders",
    )
    p.add_argument("--mode", choices=("single", "multi"), default="multi")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=DEFAULT_PORT)
    p.add_argument(
        "--bearer-token",
        dest="bearer_tokens",
        action="append",
        default=[],
        metavar="TOKEN",
        help="admit this bearer token (repeatable; each token is its own principal)",
    )
    p.add_argument(
        "--tokens-file",
        type=Path,
        metavar="FILE",
        help="bearer tokens, one per line (keeps them out of the process list)",
    )
    p.add_argument(
        "--admin-token",
        dest="admin_tokens",
        action="append",
        default=[],
        metavar="TOKEN",
        help="admit this bearer token as an admin: every session, logs, dev routes (repeatable)",
    )
    p.add_argument("--allow-anonymous", action="store_true", help="admit everyone (demos only)")
    p.add_argument("--no-playground", action="store_true")
    p.add_argument("--no-docs", action="store_true")
    p.add_argument("--no-schedules", action="store_true", help="never fire schedules by cron")
    p.add_argument("--state-root", type=Path, metavar="DIR", help="sessions go in DIR/<slug>/")
    p.add_argument("--max-body-bytes", type=int, default=None, metavar="N")
    p.add_argument(
        "--shutdown-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="on stop, wait up to S seconds for open requests before cancelling them (10)",
    )
    p.add_argument(
        "--drain-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="on stop, wait up to S seconds for writes sent with an Idempotency-Key (10)",
    )
    limits = p.add_argument_group("stalled clients (see docs/auth.md#stalled-clients)")
    limits.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="close a connection whose request head takes longer than S seconds (10)",
    )
    limits.add_argument(
        "--body-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="measure the body rate over windows of S seconds (10)",
    )
    limits.add_argument(
        "--min-body-rate",
        type=int,
        default=1024,
        metavar="B",
        help="close a connection whose request body arrives slower than B bytes/s (1024)",
    )
    limits.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="open connections at most (default 1000, or half of ulimit -n if lower)",
    )
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    emulate = p.add_argument_group("the deployed shape, emulated (see docs/deploy.md)")
    emulate.add_argument(
        "--emulate-aws",
        action="store_true",
        help="serve through the Lambda handlers, with DynamoDB, Streams, Scheduler emulated",
    )
    emulate.add_argument(
        "--dynamodb-endpoint", metavar="URL", help="DynamoDB Local instead of moto"
    )
    emulate.add_argument(
        "--chaos", metavar="SPEC", help="inject faults: duplicate=0.3,timeout=0.1,..."
    )
    emulate.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="F",
        help="scale Lambda's retry delays, the sweep and the turn lease (0.05: 20x faster)",
    )
    p.set_defaults(func=run)


def _tokens(args: argparse.Namespace) -> list[str] | str:
    if any(not t.strip() for t in args.admin_tokens):
        return "--admin-token must not be empty"
    tokens = [t for t in args.bearer_tokens if t.strip()]
    if args.bearer_tokens and len(tokens) != len(args.bearer_tokens):
        return "--bearer-token must not be empty"
    if args.tokens_file is not None:
        try:
            text = args.tokens_file.read_text(encoding="utf-8")
        except OSError as exc:
            return f"cannot read --tokens-file: {exc}"
        tokens += [line.strip() for line in text.splitlines() if line.strip()]
        if not tokens:
            return "--tokens-file holds no tokens"
    return tokens


def _limits(args: argparse.Namespace) -> Any:
    """The connection limits the flags ask for, or what is wrong with them."""
    from agentkit.hosts.connection_limits import ConnectionLimits, default_max_connections

    limits = ConnectionLimits(
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        min_body_rate=args.min_body_rate,
        max_connections=(
            default_max_connections() if args.max_connections is None else args.max_connections
        ),
    )
    problems = limits.problems()
    return "; ".join(problems) if problems else limits


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace) -> int:
    if getattr(args, "emulate_aws", False):
        from agentkit.emulator.command import run_emulated

        return run_emulated(args, args.dirs or [Path(".")])
    return _serve_local(args)


def _serve_local(args: argparse.Namespace) -> int:
    from agentkit.hosts.local import LocalHost, LocalHostOptions
    from agentkit.project.bundle import AgentBundle
    from agentkit.server.app import create_app
    from agentkit.server.auth import AuthChain
    from agentkit.server.options import DEFAULT_MAX_BODY_BYTES, ServerOptions

    dirs: list[Path] = args.dirs or [Path(".")]
    single_dir = "--mode single serves exactly one --dir"
    tokens, limits = _tokens(args), _limits(args)
    for wrong in (single_dir if args.mode == "single" and len(dirs) != 1 else "", tokens, limits):
        if isinstance(wrong, str) and wrong:
            print(f"agentkit serve: {wrong}", file=sys.stderr)
            return 2
    assert isinstance(tokens, list)
    bundles = []
    for d in dirs:
        if not d.is_dir():
            print(f"agentkit serve: {d} is not a directory", file=sys.stderr)
            return 2
        bundles.append(AgentBundle.discover(d.resolve()))
    if _report_errors(bundles):
        return 1
    slugs = [b.slug for b in bundles]
    if len(set(slugs)) != len(slugs):
        print(f"agentkit serve: two agents share a slug: {sorted(slugs)}", file=sys.stderr)
        return 2

    host_options = LocalHostOptions(
        state_root=args.state_root.resolve() if args.state_root else None,
        dev=args.dev,
        schedules=not args.no_schedules,
    )
    hosts = [LocalHost(b, host_options) for b in bundles]
    auth = AuthChain.from_flags(
        bearer_tokens=tokens,
        allow_anonymous=args.allow_anonymous,
        dev=args.dev,
        bound_host=args.host,
        admin_tokens=[t.strip() for t in args.admin_tokens],
    )
    options = ServerOptions(
        mode=args.mode,
        dev=args.dev,
        auth=auth,
        playground=not args.no_playground,
        docs=not args.no_docs,
        max_body_bytes=args.max_body_bytes or DEFAULT_MAX_BODY_BYTES,
        drain_timeout=max(0.0, args.drain_timeout),
    )
    on_startup: list[Any] = [h.start for h in hosts]
    on_shutdown: list[Any] = [h.aclose for h in hosts]
    if args.dev:
        from agentkit.hosts.reload import DevReloader

        reloader = DevReloader(hosts)
        on_startup.append(reloader.start)
        on_shutdown.insert(0, reloader.aclose)
    try:
        app = create_app(
            [h.mount() for h in hosts],
            options,
            on_startup=on_startup,
            on_shutdown=on_shutdown,
        )
    except ValueError as exc:
        print(f"agentkit serve: {exc}", file=sys.stderr)
        return 2
    if not _is_loopback(args.host) and auth.names == ["localDevStrict"]:
        print(
            "agentkit serve: warning: localDevStrict admits loopback clients only; "
            "remote callers get 401 (use --bearer-token)",
            file=sys.stderr,
        )
    # Every start-up failure is found here, before anything claims to be serving.
    sock = _bind(args.host, args.port)
    if isinstance(sock, str):
        print(f"agentkit serve: {sock}", file=sys.stderr)
        return 1
    busy = _claim_state(hosts)
    if busy is not None:
        sock.close()
        print(f"agentkit serve: {busy}", file=sys.stderr)
        return 1
    return _serve(app, args, [h.slug for h in hosts], sock, limits)


def _report_errors(bundles: list[Any]) -> bool:
    failed = False
    for bundle in bundles:
        errors = [d for d in bundle.manifest.diagnostics if d.severity == "error"]
        for d in errors:
            failed = True
            print(f"{bundle.root}: error {d.code} {d.path}: {d.message}", file=sys.stderr)
        if errors:
            print(
                f"agentkit serve: {bundle.root} has {len(errors)} error(s) in its agent "
                "folder; fix the errors above (`agentkit validate` lists them) and try again",
                file=sys.stderr,
            )
    return failed


def _bind(host: str, port: int) -> socket.socket | str:
    """The listening socket, or a one-line reason it cannot be had (and what to do)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"cannot listen on {host!r}: {exc.strerror}; pass --host 127.0.0.1"
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            return (
                f"port {port} on {host} is already in use (another agentkit serve?); stop "
                f"that process or pick another port with --port {port + 1}"
            )
        return f"cannot listen on {host}:{port}: {exc.strerror or exc}; try another --port"
    sock.set_inheritable(True)
    return sock


def _claim_state(hosts: list[Any]) -> str | None:
    from agentkit.hosts.local import StateDirBusy

    for host in hosts:
        try:
            host.claim_state_dir()
        except StateDirBusy:
            return (
                f"{host.state_dir} is already served by another agentkit process; stop it, "
                "or serve this agent from another folder with --state-root DIR"
            )
    return None


def _serve(
    app: Any, args: argparse.Namespace, slugs: list[str], sock: socket.socket, limits: Any
) -> int:
    import uvicorn

    from agentkit.hosts.connection_limits import guarded_config, quiet_accept_errors
    from agentkit.hosts.signals import stop_signals_to

    state = app.state.agentkit

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            # End live NDJSON streams first, or uvicorn would wait on them until its
            # graceful-shutdown timeout.
            loop = _loop
            if loop is not None:
                loop.call_soon_threadsafe(state.shutdown.set)
            super().handle_exit(sig, frame)

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:  # only now is it true that we serve
                _settle_collector()
                _banner(args, slugs, sock, state.options)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with stop_signals_to(self.handle_exit):  # a stop we handled is a clean exit
                yield

    _loop: asyncio.AbstractEventLoop | None = None
    config = guarded_config(
        app,
        limits,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        lifespan="on",
        timeout_graceful_shutdown=max(0.0, args.shutdown_timeout),
        access_log=False,
    )
    server = Server(config)

    async def main() -> None:
        nonlocal _loop
        _loop = asyncio.get_running_loop()
        quiet_accept_errors(_loop)
        await server.serve(sockets=[sock])

    try:
        asyncio.run(main())
    except SystemExit as exc:  # uvicorn exits this way when the app's start-up fails
        return int(exc.code) if isinstance(exc.code, int) and exc.code else 1
    finally:
        sock.close()
    return 0 if server.started else 1


def _settle_collector() -> None:
    """Move everything alive once the server is up (modules, the app, the manifest: most of
    the process's objects) out of the cyclic collector's sight. Each full collection used
    to walk all of it again: with 1,000 open streams those pauses were most of the p95 of
    append -> arrival in `bench/bench_streams.py` (11.6 ms against 3.4 ms with the
    collector off, the baseline 2.3-2.6 ms)."""
    import gc

    gc.collect()
    gc.freeze()


def _banner(args: argparse.Namespace, slugs: list[str], sock: socket.socket, options: Any) -> None:
    """What a person can open (root, playground, docs) and one curl that works as printed."""
    from agentkit.cli.banner import banner_lines

    for line in banner_lines(
        host=args.host,
        port=sock.getsockname()[1],
        slugs=slugs,
        single=args.mode == "single",
        playground=bool(options.playground),
        docs=bool(options.docs),
        bearer="bearerAuth" in options.auth.names,
    ):
        print(line, file=sys.stderr)
