"""govern's native digest core (Rust, ``native/``), when it is built.

The core reads a slow log the way pt-query-digest does (same event boundaries, header
attributes and fingerprints) and aggregates it exactly as the pure-Python engine does:
no Python object per event. It is optional: ``pip install .`` without cargo skips it,
and callers ask :func:`available` and fall back to the pure-Python engine.

``govern digest`` drives it through govern/digest/native_total.py: ranges of the input
digested on threads (:func:`range_handle`, the GIL released), merged in input order by a
:func:`new_total`, whose classes stay in Rust and are read one at a time as named
figures (``ClassFigures``). Files are mapped by the core (:func:`map_file`), which alone
decides which pages it drops from memory. To digest files from a program, use
:func:`govern.digest.runner.digest_paths`, which picks the core.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from govern._native import FileMap, Range, Total

_core: ModuleType | None
_MISSING: str | None = None  # why the extension did not import
try:
    from govern import _native as _core
except ImportError as exc:  # not built: no cargo at install time, no wheel for this platform
    _core = None
    _MISSING = str(exc)

#: Set GOVERN_NATIVE=0 to force the pure-Python engine (for comparisons and bug reports).
_DISABLED = os.environ.get("GOVERN_NATIVE", "1") == "0"


def available() -> bool:
    """True when the extension is built and not disabled with GOVERN_NATIVE=0."""
    return _core is not None and not _DISABLED


def engine() -> tuple[str, str]:
    """Which engine ``govern digest`` runs, for ``govern doctor`` and ``govern digest``:
    ``("native", where its library is)`` or ``("python", why the core does not run)``."""
    if _core is not None and not _DISABLED:
        return "native", f"Rust core {os.path.basename(_core.__file__ or '_native')}"
    if _core is not None:
        return "python", "GOVERN_NATIVE=0"
    return "python", f"the native core is not installed ({_MISSING})"


def missing() -> bool:
    """True when the core could not be imported (as opposed to switched off on purpose)."""
    return _core is None


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


def range_handle(
    data: FileMap | bytes | bytearray,
    start: int,
    stop: int,
    end: int,
    max_classes: int,
    context_ts: bytes | None,
    context_db: bytes | None,
    context_known: bool,
    server_salt: int,
    **filtering: Any,
) -> Range:
    """One range of ``data`` digested, its result left in Rust (a ``Range`` for
    :func:`new_total`). ``data`` is a :func:`map_file` (pages dropped as they are
    digested) or any buffer (bytes, an mmap: never changed).

    ``filtering``: ``since``/``until`` (bytes), ``keep_event(db, user, host)`` and
    ``keep_class(fingerprint)`` (callables), ``needs_db``, ``max_events`` (the
    reader's first events only: a range's deferred head). See
    govern/digest/native_total.py.
    """
    result: Range = _require().range_handle(
        data,
        start,
        stop,
        end,
        max_classes,
        context_ts,
        context_db,
        context_known,
        server_salt,
        **filtering,
    )
    return result


def map_file(path: str) -> FileMap:
    """``path`` mapped read-only by the core (``len``, ``close``)."""
    found: FileMap = _require().FileMap(path)
    return found


def new_total(max_classes: int) -> Total:
    """An empty merged digest (native/src/total.rs): ``add`` ranges in input order."""
    total: Total = _require().Total(max_classes)
    return total


def stored_merge() -> Any | None:
    """A merge of the history store's class states in the core (``StoredMerge``,
    native/src/stored.rs), or None when the core is not available."""
    made = None if _core is None or _DISABLED else getattr(_core, "StoredMerge", None)
    return None if made is None else made()


def fingerprints_naming(
    fingerprints: bytes, ends: array[int], keys: list[str]
) -> array[int] | None:
    """Positions of the fingerprints (joined, ending at ``ends``) that name one of ``keys``
    as a whole table name, or may (native/src/screen.rs); None without the core."""
    if _core is None or _DISABLED:
        return None
    found = _core.fingerprints_naming(
        fingerprints, ends.tobytes(), [key.encode("utf-8", "surrogatepass") for key in keys]
    )
    return array("I", found)


def plain_samples(
    samples: bytes, ends: array[int], words: Sequence[str], max_depth: int
) -> bytes | None:
    """One byte per sample (joined, ending at ``ends``): 1 when the core finds it lexically
    plain (native/src/screen.rs: META001's lexical checks cannot fire), else 0; None
    without the core."""
    if _core is None or _DISABLED:
        return None
    found: bytes = _core.plain_samples(
        samples, ends.tobytes(), [word.encode() for word in words], max_depth
    )
    return found
