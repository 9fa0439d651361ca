"""Log bytes to the strings aggregates keep, decoded once each (both engines' hot paths)."""

from __future__ import annotations

#: Distinct texts (db, user, host, values) kept decoded; the cache starts over above this.
TEXT_CACHE_LIMIT = 50_000

_TEXTS: dict[bytes, str] = {}
_LABELS: dict[bytes, str] = {}


def text(raw: bytes) -> str:
    """A value from the log as text; bytes that are not UTF-8 stay visible as escapes."""
    found = _TEXTS.get(raw)
    if found is None:
        if len(_TEXTS) > TEXT_CACHE_LIMIT:
            _TEXTS.clear()
        found = _TEXTS[raw] = raw.decode("utf-8", "backslashreplace")
    return found


def label(name: bytes) -> str:
    """An attribute name (Query_time, QC_hit …) as text."""
    found = _LABELS.get(name)
    if found is None:
        found = _LABELS[name] = name.decode("ascii", "replace")
    return found


def show(raw: bytes) -> str:
    """A bad value cut to 40 bytes, for a one-line malformed-event message."""
    shown = raw[:40].decode("utf-8", "backslashreplace")
    return shown + ("…" if len(raw) > 40 else "")


#: Why a record is malformed when the input ends inside it before any statement.
CUT_SHORT = "event without a statement: the input ends inside it"


def malformed_reason(query_time: bytes | None) -> str:
    """Why an event is malformed: its Query_time is not a number, or (None) it is cut short."""
    if query_time is None:
        return CUT_SHORT
    return f"Query_time is not a number: {show(query_time)}"
