"""Import user files as modules of one project, isolated from other projects.

Every agent project has a top-level `agent` package (and maybe `evals`). Two projects in one
process (multi-agent serve, tests) would fight over `sys.modules["agent"]`. A `ModuleScope`
keeps each project's `agent.*` / `evals.*` modules in its own table and swaps that table
into `sys.modules` only while it imports (under one process-wide lock). Functions keep
their own module globals, so handlers imported in one scope keep working afterwards.

Limitation: an import statement that runs *later*, inside a handler body (a lazy
`import agent.lib.x` at call time), resolves against whatever `sys.modules` holds then.
Import shared code at module top level.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

# Top-level package names that belong to the project, not to the Python installation.
PROJECT_PACKAGES = ("agent", "evals")

_LOCK = threading.RLock()


class _FreshSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles user files from source every time.

    Bytecode caches are validated by whole-second mtime and size, so a file edited twice in
    one second (a test, an editor save during `serve --dev`) could run stale code.
    """

    def get_code(self, fullname: str) -> Any:
        source = self.get_data(self.path)
        return compile(source, self.path, "exec", dont_inherit=True)


class _ProjectFinder(importlib.abc.MetaPathFinder):
    """Finds `agent.*` / `evals.*` submodules in the active project, with fresh loaders."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not _owned(fullname) or "." not in fullname or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        origin = spec.origin or ""
        return importlib.util.spec_from_file_location(
            fullname,
            origin,
            loader=_FreshSourceLoader(fullname, origin),
            submodule_search_locations=spec.submodule_search_locations,
        )


_FINDER = _ProjectFinder()


def _owned(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in PROJECT_PACKAGES)


def module_name_for(rel_path: str) -> str:
    """`agent/tools/get_weather.py` -> `agent.tools.get_weather`;
    `evals/review/basic.eval.py` -> `evals.review.basic_eval`."""
    path = rel_path[:-3] if rel_path.endswith(".py") else rel_path
    parts = path.split("/")
    parts[-1] = parts[-1].replace(".", "_")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _execute(name: str, spec: importlib.machinery.ModuleSpec) -> ModuleType:
    """Create, register and run the module `spec` describes; a failed run unregisters it,
    so the next import tries again instead of finding a half-run module."""
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    if spec.loader is not None:
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    return mod


class ModuleScope:
    """The `agent.*` and `evals.*` modules of one project root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._modules: dict[str, ModuleType] = {}

    @contextmanager
    def active(self) -> Iterator[None]:
        """Install this project's modules in `sys.modules` for the duration of the block."""
        with _LOCK:
            saved = {k: sys.modules.pop(k) for k in list(sys.modules) if _owned(k)}
            sys.modules.update(self._modules)
            root = str(self.root)
            sys.path.insert(0, root)
            sys.meta_path.insert(0, _FINDER)
            try:
                for top in PROJECT_PACKAGES:
                    if top not in sys.modules and (self.root / top).is_dir():
                        self._ensure_package(top, self.root / top)
                yield
            finally:
                self._modules = {k: sys.modules.pop(k) for k in list(sys.modules) if _owned(k)}
                sys.meta_path.remove(_FINDER)
                sys.path.remove(root)
                sys.modules.update(saved)

    def load_file(self, module: str, path: Path) -> ModuleType:
        """Import `path` as `module` (parents created as packages of their folders).

        Cached: a second call returns the same module. Exceptions from the user's code
        propagate to the caller.
        """
        with self.active():
            existing = sys.modules.get(module)
            if existing is not None:
                return existing
            parts = module.split(".")
            folder = path.parent
            parents: list[tuple[str, Path]] = []
            for i in range(len(parts) - 1, 0, -1):
                parents.append((".".join(parts[:i]), folder))
                folder = folder.parent
            for name, pkg_dir in reversed(parents):
                if name not in sys.modules:
                    self._ensure_package(name, pkg_dir)
            spec = importlib.util.spec_from_file_location(
                module, path, loader=_FreshSourceLoader(module, str(path))
            )
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {path.name}")
            mod = _execute(module, spec)
            parent_name, _, leaf = module.rpartition(".")
            if parent_name and leaf.isidentifier():
                setattr(sys.modules[parent_name], leaf, mod)
            return mod

    def _ensure_package(self, name: str, folder: Path) -> None:
        # A package whose search path is exactly this folder, so `agent.lib.x` can never be
        # found in another project that happens to be on sys.path too.
        init = folder / "__init__.py"
        if init.is_file():
            spec = importlib.util.spec_from_file_location(
                name,
                init,
                loader=_FreshSourceLoader(name, str(init)),
                submodule_search_locations=[str(folder)],
            )
        else:
            spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
            spec.submodule_search_locations = [str(folder)]
        if spec is None:
            raise ImportError(f"cannot create package {name}")
        mod = _execute(name, spec)
        parent_name, _, leaf = name.rpartition(".")
        if parent_name and parent_name in sys.modules:
            setattr(sys.modules[parent_name], leaf, mod)
