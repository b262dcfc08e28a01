"""The project layer: `agent/` folder discovery, diagnostics, the manifest and the build."""
