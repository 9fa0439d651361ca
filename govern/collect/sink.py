"""Where closed buckets go: a directory of ``govern.digest`` files, one per host and bucket.

``govern digest merge DIR/*.json`` reads them like any saved digest. Writing a
bucket that is already there replaces it (a file renamed over the old one), so a
collector that re-reads after a crash writes the same bucket again, never twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

from govern.errors import ConfigError


class Sink(Protocol):
    """Receives closed buckets. Writing the same (host, start) again replaces it."""

    def write(self, host: str, start: str, document: dict[str, Any]) -> str:
        """Store one bucket's document; return where it went (for messages)."""
        ...


def bucket_file_name(host: str, start: str) -> str:
    """``db1_2026-11-25T13-00-00.json``: sorts by host, then time."""
    safe_host = re.sub(r"[^A-Za-z0-9_.-]", "_", host) or "_"
    return f"{safe_host}_{start.replace(' ', 'T').replace(':', '-')}.json"


class DirectorySink:
    """A directory of bucket files (made 0700 if missing; files 0600: samples hold data)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:
            raise ConfigError(
                f"{self.path}: cannot create the bucket directory ({exc.strerror})"
            ) from None
        if not self.path.is_dir():
            raise ConfigError(f"{self.path}: not a directory")
        self._sweep()

    def _sweep(self) -> None:
        """Remove what writers killed mid-write left (an hour old: others may be writing)."""
        limit = time.time() - 3600
        for leftover in self.path.glob(".bucket-*"):
            with contextlib.suppress(OSError):
                if leftover.stat().st_mtime < limit:
                    leftover.unlink()

    def write(self, host: str, start: str, document: dict[str, Any]) -> str:
        target = self.path / bucket_file_name(host, start)
        fd, temporary = tempfile.mkstemp(prefix=".bucket-", dir=self.path)
        try:
            # json.dumps, not json.dump: only the one-shot form uses the C encoder (a
            # bucket of 1,000 classes: 0.3 s instead of 3 s).
            text = json.dumps(document, ensure_ascii=False, default=list)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
            os.replace(temporary, target)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        return str(target)
