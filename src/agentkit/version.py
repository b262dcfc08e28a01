"""The package version, in a module of its own so that any part can name it without
importing the public authoring API."""

__version__ = "0.1.0"
