from agentkit import define_skill

skill = define_skill(
    description="Use when asked to draft release notes from merged pull requests.",
    markdown=(
        "# Release notes\n\n"
        "Group merged PRs with `templates/notes.md`; one line per PR, user-facing words."
    ),
    files={"templates/notes.md": "## Changes\n\n- <title> (#<number>, @<author>)\n"},
)
