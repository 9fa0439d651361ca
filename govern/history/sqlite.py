"""The embedded history store: one SQLite file (0600) in govern's state directory."""

from __future__ import annotations

from pathlib import Path


class SqliteStore:
    def __init__(self, path: Path) -> None:
        raise NotImplementedError("the SQLite history store lands next")
