"""`python -m agentkit.aws.check <manifest.json>`: what the AWS build refuses.

Run by `sam build` after `agentkit build` (and by `agentkit build --target aws`). A
schedule whose cron EventBridge cannot express (both day fields restricted, say) is an error
diagnostic here, so it fails the build rather than the deploy. Exit status 1 when there is
an error, 0 otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentkit.project.manifest import Diagnostic, Manifest
from agentkit.project.validation import cron_aws_problem


def aws_diagnostics(manifest: Manifest) -> list[Diagnostic]:
    """Error diagnostics for parts of the manifest that cannot be deployed on AWS."""
    found: list[Diagnostic] = []
    for spec in manifest.schedules:
        problem = cron_aws_problem(spec.cron)
        if problem is not None:
            found.append(
                Diagnostic(
                    severity="error",
                    code="schedule.cron_untranslatable",
                    path=spec.source,
                    message=f"schedule {spec.id!r}: {problem}",
                )
            )
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m agentkit.aws.check <manifest.json>", file=sys.stderr)
        return 2
    path = Path(args[0])
    try:
        manifest = Manifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"agentkit aws check: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    problems = aws_diagnostics(manifest)
    for d in problems:
        print(f"{d.path}: {d.severity}: {d.message} [{d.code}]", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
