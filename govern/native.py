"""govern's native digest core (Rust, ``native/``), when it is built.

The core reads a slow log the way pt-query-digest does (same event boundaries, header
attributes and fingerprints) and returns finished per-class aggregates: no Python
object per event. It is optional: ``pip install .`` without cargo skips it, and
callers ask :func:`available` and fall back to the pure-Python engine.

A digest stays in Rust memory (a few hundred bytes per class) and hands Python what it
asks for: ``summary()`` (fingerprint, count, Query_time sum per class) or one class in
full, ``class_at(i)``, as a dict of bytes and integers: numbers are micro-units (the
Python engine's convention, docs/digest.md), ``metrics`` hold count, sum, min, max and the
sketch's (key, count) buckets, ``flags`` (yes, count), ``values`` (value, count) pairs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from govern._native import Digest

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
) -> Digest:
    """Digest one uncompressed log file, memory-mapped, on ``threads`` threads (0: every core).

    Past ``max_classes`` distinct fingerprints (in log order), events go to ``other()``.
    """
    return _require().digest_file(Path(path), threads, max_classes)


def digest_stream(chunks: Iterable[bytes], max_classes: int | None = None) -> Digest:
    """Digest a log that arrives in pieces (stdin, a decompressed file): same result as one file."""
    stream = _require().Stream(max_classes)
    for chunk in chunks:
        stream.feed(chunk)
    return stream.finish()


def digest_range(
    data: Any,
    start: int,
    stop: int,
    end: int,
    max_classes: int,
    context_ts: bytes | None,
    context_db: bytes | None,
    context_known: bool,
    server_salt: int,
    release: bool = False,
) -> tuple[Any, ...]:
    """One byte range as the Python engine digests it (see govern/digest/native_engine.py).

    ``release``: ``data`` is a read-only mmap of a file, and pages already digested may be
    dropped from resident memory (never for bytes: it would zero them).
    """
    result: tuple[Any, ...] = _require().digest_range(
        data,
        start,
        stop,
        end,
        max_classes,
        context_ts,
        context_db,
        context_known,
        server_salt,
        release,
    )
    return result


def range_handle(
    data: Any,
    start: int,
    stop: int,
    end: int,
    max_classes: int,
    context_ts: bytes | None,
    context_db: bytes | None,
    context_known: bool,
    server_salt: int,
    release: bool = False,
    **filtering: Any,
) -> Any:
    """:func:`digest_range`, its result left in Rust (a ``Range`` for :func:`new_total`).

    ``filtering``: ``since``/``until`` (bytes), ``keep_event(db, user, host)`` and
    ``keep_class(fingerprint)`` (callables), ``needs_db``, ``max_events`` (the
    reader's first events only: a range's deferred head). See
    govern/digest/native_total.py.
    """
    return _require().range_handle(
        data,
        start,
        stop,
        end,
        max_classes,
        context_ts,
        context_db,
        context_known,
        server_salt,
        release,
        **filtering,
    )


def new_total(max_classes: int) -> Any:
    """An empty merged digest (native/src/total.rs): ``add`` ranges in input order."""
    return _require().Total(max_classes)


def as_dict(digest: Digest) -> dict[str, Any]:
    """A whole digest as plain data (for tests and small logs: every class becomes dicts)."""
    return {
        "events": digest.events,
        "no_query": digest.no_query,
        "malformed": digest.malformed,
        "classes": [digest.class_at(i) for i in range(len(digest))],
        "other": digest.other(),
    }
