"""`agentkit serve --emulate-aws`: its checks and messages, then `serve_emulated`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run_emulated(args: argparse.Namespace, dirs: list[Path]) -> int:
    """Check the flags that go with `--emulate-aws` and serve (exit codes as `serve`)."""
    from agentkit.emulator.chaos import ChaosSpec, ChaosSpecError
    from agentkit.emulator.stack import EmulatorOptions, serve_emulated

    def usage(message: str) -> int:
        print(f"agentkit serve: {message}", file=sys.stderr)
        return 2

    if len(dirs) != 1:
        return usage("--emulate-aws serves exactly one --dir (a stack is one agent)")
    if not dirs[0].is_dir():
        return usage(f"{dirs[0]} is not a directory")
    if args.dev:
        return usage("--emulate-aws runs the built agent, as deployed; drop --dev")
    tokens = [t for t in args.bearer_tokens if t.strip()]
    if len(tokens) != 1:
        # A deployed stack never serves without auth: its bearer secret is this token.
        return usage("--emulate-aws needs exactly one --bearer-token (the stack's secret)")
    try:
        chaos = ChaosSpec.parse(args.chaos)
    except ChaosSpecError as exc:
        return usage(str(exc))
    if not 0 < args.time_scale <= 1:
        return usage("--time-scale must be in (0, 1]")
    options = EmulatorOptions(
        project=dirs[0].resolve(),
        bearer_token=tokens[0],
        dynamodb_endpoint=args.dynamodb_endpoint,
        chaos=chaos,
        time_scale=args.time_scale,
        state_dir=args.state_root.resolve() if args.state_root else None,
    )
    return serve_emulated(options, args.host, args.port)
