"""The state one discovery run carries around."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentkit.models.conformance import as_model, model_object_problem
from agentkit.project.diagnostics import Collector
from agentkit.project.files import ProjectFS
from agentkit.project.frontmatter import FrontmatterError, MarkdownDoc, parse_markdown
from agentkit.project.importing import Importer
from agentkit.project.loader import ModuleScope
from agentkit.project.validation import model_problem


@dataclass
class Ctx:
    root: Path
    fs: ProjectFS
    importer: Importer
    diag: Collector

    @classmethod
    def create(cls, root: Path) -> Ctx:
        diag = Collector()
        fs = ProjectFS(root, diag)
        return cls(root=root, fs=fs, importer=Importer(ModuleScope(root), fs, diag), diag=diag)

    @property
    def agent_dir(self) -> Path:
        return self.root / "agent"

    def markdown(self, path: Path) -> MarkdownDoc | None:
        """Read and split a markdown file; problems become diagnostics."""
        text = self.fs.read_text(path)
        if text is None:
            return None
        try:
            return parse_markdown(text)
        except FrontmatterError as exc:
            self.diag.add("frontmatter.malformed", self.fs.rel(path), str(exc))
            return None

    def check_model(self, model: object, path: Path) -> str | None:
        """The model id when valid (or None when unset); invalid ids are diagnosed."""
        if model is None:
            return None
        problem = model_problem(model)
        if problem:
            self.diag.add("model.invalid", self.fs.rel(path), problem)
            return None
        return str(model)

    def check_agent_model(self, model: object, path: Path) -> str | None:
        """`define_agent`'s model as the manifest records it: the id, or a model object's.

        Only an agent's own file may hand over a model object; everywhere else a model is
        named by id.
        """
        if model is None or isinstance(model, str):
            return self.check_model(model, path)
        found = as_model(model)
        if found is None:
            self.diag.add(
                "model.invalid",
                self.fs.rel(path),
                "define_agent(model=...) takes a 'provider:model' id or an object implementing"
                f" agentkit.models.Model: {model_object_problem(model)}",
            )
            return None
        return found.id

    def ignored(self, path: Path, why: str) -> None:
        self.diag.add("file.ignored", self.fs.rel(path), why)

    def first_of_name(self, what: str, name: str, source: str, seen: Mapping[str, str]) -> bool:
        """Whether `name` is still free in `seen` (its names and where each was defined):
        the first file keeps a name, a later one is a `name.duplicate` error at `source`."""
        if name not in seen:
            return True
        self.diag.add("name.duplicate", source, f"{what} {name!r} is also defined in {seen[name]}")
        return False
