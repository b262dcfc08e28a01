"""The Slack channel: mention the app in a channel, or write to it directly.

Each thread is one conversation; the answer streams into the thread as it is written
(or is posted once at the end where it cannot stream, as on AWS). `reset_password`
needs approval: Approve / Deny buttons appear in the thread and only the user ids in
`HELPDESK_APPROVERS` (comma separated, such as `U012AB3CD`) can press them.

Set `SLACK_SIGNING_SECRET` and `SLACK_BOT_TOKEN` (see docs/slack.md).
"""

import os

from agentkit.channels.slack import slack_channel

channel = slack_channel(
    approvers=[u for u in os.environ.get("HELPDESK_APPROVERS", "").split(",") if u],
    description="The IT helpdesk in Slack threads.",
)
