"""The GitHub channel: point a repository's webhook at `POST /v1/channels/github`.

Opened, reopened, ready-for-review and pushed-to pull requests start (or continue) one
review conversation per PR; comments on the PR continue it; each turn's answer is posted
back as a PR comment. Calls that need approval (such as `approve_pr`) are listed in a
comment and run only after `/approve <callId>` from one of the approvers below.

Set `GITHUB_WEBHOOK_SECRET` (the webhook's secret) and `GITHUB_TOKEN` (a GitHub App
installation token, or a fine-grained token with pull request and issue write access).
"""

import os

from agentkit.channels.github import github_channel

channel = github_channel(
    approvers=[login for login in os.environ.get("PR_REVIEW_APPROVERS", "").split(",") if login],
    description="Reviews pull requests of the repositories whose webhook points here.",
)
