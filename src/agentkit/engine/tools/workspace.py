"""Per-session workspaces: the folder a session's agent tools run in.

Seeded once, when a session first needs it, from `agent/sandbox/workspace/**`, with the
instructions as `AGENTS.md`, each skill under `.agentkit/skills/<name>/SKILL.md` (plus its
files), and each agent-execution tool's source as `.agentkit/tools/<name>.py`, catalogued
at the end of `AGENTS.md`. Per-send `workspaceFiles` are written before the turn; their
paths must be relative and stay inside.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from agentkit.errors import BadRequest
from agentkit.project.manifest import Manifest, ToolSpec
from agentkit.store.base import SessionFolders

SEED_MARKER = ".agentkit/seeded"
MAX_FILES = 200
TOOLS_DIR = ".agentkit/tools"
# Most filesystems refuse a longer name (one path part), in bytes.
MAX_NAME_BYTES = 255
# What seeding lays down: a per-send file cannot turn these folders into files, or these
# files into folders, without the write failing (or breaking the seeded workspace).
RESERVED_DIRS = frozenset({".agentkit", ".agentkit/skills", TOOLS_DIR})
RESERVED_FILES = frozenset({"AGENTS.md", SEED_MARKER})


def default_state_root(folders: SessionFolders | None) -> Path:
    """Where per-session folders go when the host names no place: beside the store's own
    folders when it keeps them (the file store), else a fresh temporary folder."""
    return folders.root if folders is not None else Path(tempfile.mkdtemp(prefix="agentkit-"))


def safe_relative(path: str) -> PurePosixPath:
    """A workspace-relative path, or `BadRequest` if it is absolute or climbs out."""
    if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
        raise BadRequest(f"invalid workspace file path: {path!r}", code="invalid_path")
    if not _is_text(path):
        raise BadRequest(
            f"workspace file path is not valid Unicode text: {path[:80]!r}", code="invalid_path"
        )
    rel = PurePosixPath(path)
    if rel.is_absolute() or any(part in ("..", "") for part in rel.parts) or rel.parts[0] == ".":
        raise BadRequest(
            f"workspace file path must be relative and inside the workspace: {path!r}",
            code="invalid_path",
        )
    return rel


def _is_text(value: str) -> bool:
    """False for strings holding lone surrogates (valid JSON escapes, but no UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_files(files: Mapping[str, str] | None) -> dict[str, str]:
    """Validate per-send files before anything is recorded."""
    if not files:
        return {}
    if len(files) > MAX_FILES:
        raise BadRequest(f"too many workspace files (at most {MAX_FILES})")
    out: dict[str, str] = {}
    for path, text in files.items():
        if not isinstance(text, str) or not _is_text(text):
            raise BadRequest(f"workspace file {path[:80]!r} must be valid Unicode text")
        rel = safe_relative(path)
        if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in rel.parts):
            raise BadRequest(
                f"workspace file path has a part over {MAX_NAME_BYTES} bytes: {path[:80]!r}",
                code="invalid_path",
            )
        out[str(rel)] = text
    # A file where seeding or another of these files needs a folder cannot be written.
    for name in out:
        if name in RESERVED_DIRS:
            raise BadRequest(f"workspace file {name!r} would replace a folder", code="invalid_path")
        for parent in PurePosixPath(name).parents:
            folder = str(parent)
            if folder in out or folder in RESERVED_FILES:
                raise BadRequest(
                    f"workspace file {name!r} would sit inside the file {folder!r}",
                    code="invalid_path",
                )
    return out


def _write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    # A short fixed-length name: `.<name>.tmp` would not fit beside a name near the limit.
    tmp = target.with_name(f".agentkit-{secrets.token_hex(4)}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)  # a failed write leaves no stray temporary file
        raise


def seed(
    workspace: Path,
    manifest: Manifest,
    sandbox_dir: Path | None,
    project_root: Path | None = None,
) -> None:
    """Create and seed the workspace once (a marker file records that it was done).

    `project_root` is where the agent tools' source files are read from; without it the
    tools are still catalogued, with no script beside them.
    """
    marker = workspace / SEED_MARKER
    if marker.exists():
        return
    workspace.mkdir(parents=True, exist_ok=True)
    if sandbox_dir is not None and sandbox_dir.is_dir():
        shutil.copytree(sandbox_dir, workspace, dirs_exist_ok=True)
    agent_tools = [t for t in manifest.tools if t.execution == "agent" and t.ref is not None]
    for tool in agent_tools:
        _copy_tool_source(workspace, tool, project_root)
    agents_md = manifest.instructions
    if agent_tools:
        catalog = tool_catalog(agent_tools)
        agents_md = f"{agents_md.rstrip()}\n\n{catalog}" if agents_md.strip() else catalog
    if agents_md:
        _write(workspace, "AGENTS.md", agents_md)
    for skill in manifest.skills:
        base = f".agentkit/skills/{skill.name}"
        _write(workspace, f"{base}/SKILL.md", skill.markdown)
        for rel, text in skill.files.items():
            _write(workspace, f"{base}/{safe_relative(rel)}", text)
    _write(workspace, SEED_MARKER, "")


def tool_script(name: str) -> str:
    """Where an agent tool's source lands in the workspace."""
    return f"{TOOLS_DIR}/{safe_relative(name + '.py')}"


def _copy_tool_source(workspace: Path, tool: ToolSpec, project_root: Path | None) -> None:
    if project_root is None or tool.ref is None:
        return
    try:
        text = (project_root / tool.ref.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return  # the tool still runs from the project; only the copy for reading is missing
    _write(workspace, tool_script(tool.name), text)


def tool_catalog(tools: list[ToolSpec]) -> str:
    """The `AGENTS.md` section naming the agent tools, what they do and how they run."""
    lines = [
        "## Agent tools",
        "",
        "These tools run as scripts in this folder. Call them as tools; agentkit runs the",
        "script with this folder as its working directory. By hand, pipe the input as JSON:",
        "`echo '{\"input\": {...}}' | python -m agentkit.engine.tools.agent_tool <module>"
        " <function> <script>`.",
        "",
    ]
    for tool in tools:
        ref = tool.ref
        where = f"`{tool_script(tool.name)}`"
        if ref is not None:
            where += f" (module `{ref.module}`, function `{ref.attribute}`)"
        description = " ".join(tool.description.split())
        lines.append(f"- `{tool.name}`: {description} Script: {where}.")
    return "\n".join(lines) + "\n"


def write_files(workspace: Path, files: Mapping[str, str]) -> None:
    """Write already-checked per-send files into the workspace.

    Clashes with what the workspace already holds (a file where a folder is needed, or the
    other way round) are found before anything is written, so they change nothing; any
    other failure to write is the request's files' fault as far as the caller can tell,
    hence `BadRequest` rather than a server error.
    """
    check_fits(workspace, files)
    try:
        for rel, text in files.items():
            _write(workspace, rel, text)
    except OSError as exc:
        raise BadRequest(
            f"could not write workspace file: {exc.strerror or exc}", code="invalid_path"
        ) from None


def check_fits(workspace: Path, files: Mapping[str, str]) -> None:
    """`BadRequest` when a checked file clashes with what the workspace holds now."""
    for rel in files:
        _check_fits(workspace, rel)


def _check_fits(workspace: Path, rel: str) -> None:
    target = workspace / rel
    if target.is_dir():
        raise BadRequest(f"workspace file {rel!r} would replace a folder", code="invalid_path")
    for parent in PurePosixPath(rel).parents:
        if str(parent) == ".":
            break
        here = workspace / parent
        if here.exists() and not here.is_dir():
            raise BadRequest(
                f"workspace file {rel!r} would sit inside the file {str(parent)!r}",
                code="invalid_path",
            )
