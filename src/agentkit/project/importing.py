"""Import one user file and pick out the single definition it must hold."""

from __future__ import annotations

import traceback
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from agentkit.project.diagnostics import Collector
from agentkit.project.files import ProjectFS
from agentkit.project.loader import ModuleScope, module_name_for
from agentkit.project.manifest import CodeRef
from agentkit.project.typos import (
    FIELD_EXTRA_WARNING,
    field_keyword_typos,
    unexpected_keyword_hint,
)


def _user_traceback(exc: BaseException, root: Path) -> str:
    """The traceback with agentkit's and importlib's own frames removed."""
    te = traceback.TracebackException.from_exception(exc)
    real = str(root.resolve())
    frames = [f for f in te.stack if f.filename.startswith((str(root), real))]
    te.stack = traceback.StackSummary.from_list(frames)
    text = "".join(te.format())
    return text.replace(real + "/", "").replace(str(root) + "/", "")


class Importer:
    """Imports user files into the project's module scope, reporting failures."""

    def __init__(self, scope: ModuleScope, fs: ProjectFS, diag: Collector) -> None:
        self.scope = scope
        self.fs = fs
        self.diag = diag

    def module(self, path: Path) -> ModuleType | None:
        rel = self.fs.rel(path)
        mod: ModuleType | None = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.filterwarnings("always", message=FIELD_EXTRA_WARNING)
            try:
                mod = self.scope.load_file(module_name_for(rel), path)
            except (Exception, SystemExit) as exc:
                self.diag.add(
                    "import.failed",
                    rel,
                    f"importing this file raised {type(exc).__name__}: {exc}"
                    f"{unexpected_keyword_hint(exc)}\n" + _user_traceback(exc, self.scope.root),
                )
        self._report_warnings(caught, rel)
        return mod

    def _report_warnings(self, caught: list[warnings.WarningMessage], rel: str) -> None:
        """Pydantic's unknown-`Field`-keyword warnings become diagnostics; others pass on."""
        for w in caught:
            typos = field_keyword_typos(str(w.message))
            if not typos:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
                continue
            # The file that called Field(): the imported one, or a module of agent/lib/.
            path = self.fs.rel(Path(w.filename))
            path = rel if Path(path).is_absolute() else path
            for message in typos:
                self.diag.add("field.unknown_keyword", path, f"line {w.lineno}: {message}")

    def single(self, path: Path, kind: type[Any] | tuple[type[Any], ...], what: str) -> Any:
        """Import `path` and return `(CodeRef, definition)` for its one `kind` value.

        Zero or several definitions are error diagnostics (and return None).
        """
        mod = self.module(path)
        if mod is None:
            return None
        found = definitions_in(mod, kind)
        rel = self.fs.rel(path)
        if not found:
            self.diag.add(
                "definition.none",
                rel,
                f"this file defines no {what}; add one (files here are always discovered, "
                "shared code belongs in agent/lib/)",
            )
            return None
        if len(found) > 1:
            names = ", ".join(name for name, _ in found)
            self.diag.add(
                "definition.multiple",
                rel,
                f"this file defines {len(found)} {what}s ({names}); keep exactly one per file",
            )
            return None
        attr, value = found[0]
        ref = CodeRef(module=mod.__name__, attribute=attr, path=rel)
        return ref, value


def definitions_in(
    mod: ModuleType, kind: type[Any] | tuple[type[Any], ...]
) -> list[tuple[str, Any]]:
    """Module attributes of type `kind`, one entry per distinct object.

    Tool definitions imported from elsewhere (their handler lives in another module) are
    not counted, so a file may import a sibling tool without defining two.
    """
    seen: set[int] = set()
    out: list[tuple[str, Any]] = []
    for name, value in vars(mod).items():
        if isinstance(value, kind) and id(value) not in seen:
            seen.add(id(value))
            out.append((name, value))
    if len(out) > 1:
        own = [
            (n, v)
            for n, v in out
            if getattr(getattr(v, "handler", None), "__module__", mod.__name__) == mod.__name__
        ]
        return own or out
    return out
