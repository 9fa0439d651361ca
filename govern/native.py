"""govern's native digest core (Rust, ``native/``), when it is built.

The core reads a slow log the way pt-query-digest does (same event boundaries, header
attributes and fingerprints) and returns finished per-class aggregates: no Python
object per event. It is optional: ``pip install .`` without cargo skips it, and
callers ask :func:`available` and fall back to the pure-Python engine.

Results are plain dicts (see ``docs/digest-native.md`` for the layout): attribute
names, fingerprints and query texts are bytes, as they are in the log.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

_core: ModuleType | None
try:
    from govern import _native as _core
except ImportError:  # not built: no cargo at install time
    _core = None

#: Set GOVERN_NATIVE=0 to force the pure-Python engine (for comparisons and bug reports).
_DISABLED = os.environ.get("GOVERN_NATIVE", "1") == "0"


def available() -> bool:
    """True when the extension is built and not disabled with GOVERN_NATIVE=0."""
    return _core is not None and not _DISABLED


def _require() -> Any:
    if _core is None or _DISABLED:
        raise RuntimeError(
            "the native digest core is not available (built without cargo, or GOVERN_NATIVE=0)"
        )
    return _core


def fingerprint(query: bytes) -> bytes:
    """pt-query-digest's fingerprint of one statement."""
    result: bytes = _require().fingerprint(query)
    return result


def query_id(fingerprint: bytes) -> str:
    """pt's query ID: the uppercase hex MD5 of the fingerprint (32 digits; PMM and old pt use the last 16)."""
    result: str = _require().query_id(fingerprint)
    return result


def digest_file(
    path: str | os.PathLike[str], threads: int = 0, max_classes: int | None = None
) -> dict[str, Any]:
    """Digest one uncompressed log file, memory-mapped, on ``threads`` threads (0: every core).

    Past ``max_classes`` distinct fingerprints (in log order), events go to ``other``.
    """
    result: dict[str, Any] = _require().digest_file(Path(path), threads, max_classes)
    return result


def digest_stream(chunks: Iterable[bytes], max_classes: int | None = None) -> dict[str, Any]:
    """Digest a log that arrives in pieces (stdin, a decompressed file): same result as one file."""
    stream = _require().Stream(max_classes)
    for chunk in chunks:
        stream.feed(chunk)
    result: dict[str, Any] = stream.finish()
    return result
