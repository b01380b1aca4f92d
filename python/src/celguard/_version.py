"""The package's version: the one place it is written (pyproject.toml reads
it from here, the clients send it in their User-Agent)."""

__version__ = "0.1.0"
