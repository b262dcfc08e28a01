"""The files a project needs for `sam build && sam deploy`, from one source.

`templates/` holds the SAM template and the layer's Makefile. This repository's
`template.yaml` and `layers/Makefile` are copies of them (a test checks they are equal);
`agentkit init` writes them into a new project beside a samconfig.toml, the functions'
Makefile and a layer requirements file that takes agentkit from the package index.
"""

from __future__ import annotations

from importlib.resources import files

from agentkit.version import __version__

DISTRIBUTION = "agentkit-serverless"


def _read(name: str) -> str:
    return files("agentkit.aws").joinpath("templates", name).read_text(encoding="utf-8")


def template_yaml() -> str:
    """The SAM template of an agentkit stack."""
    return _read("template.yaml")


def layer_makefile() -> str:
    """The Makefile `sam build` runs for the dependencies layer."""
    return _read("layers/Makefile")


def project_files(stack_name: str) -> dict[str, str]:
    """Every deployment file of a new project, by its path inside the project."""
    return {
        "template.yaml": template_yaml(),
        "samconfig.toml": _read("samconfig.toml").replace("{stack}", stack_name),
        "Makefile": _read("Makefile"),
        "layers/Makefile": layer_makefile(),
        "layers/requirements.txt": _read("requirements.txt").replace("{version}", __version__),
        "layers/requirements-otel.txt": _read("requirements-otel.txt").replace(
            "{version}", __version__
        ),
    }
