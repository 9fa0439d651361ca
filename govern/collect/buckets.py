"""Time buckets: which bucket an event feeds, and where a range of log text changes bucket.

A bucket is ``[start, start + width)`` of the log's own clock (``YYYY-MM-DD HH:MM:SS``,
as the digest normalises ``# Time:``). Within one source, buckets only move forward
(docs/design/collect.md, "Buckets"): an event whose time lies before the bucket the
source already feeds (``# Time:`` goes backwards under concurrency, and MariaDB
stamps an event with its start, not its end) joins that bucket. So the same text is
cut at the same places however the reads happen to be split, which is what makes a
re-read after a crash write the same buckets.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from govern import units
from govern.errors import UsageError
from govern.slowlog import SEPARATOR, normalize_time

_FORMAT = "%Y-%m-%d %H:%M:%S"
_EPOCH = dt.datetime(1970, 1, 1)
#: A ``# Time:`` header line; its value as written (pt reads the first 15 or 19 bytes).
_TIME_LINE = re.compile(rb"^# Time: ([^\n]{15,19})", re.M)


def parse_width(text: str, option: str = "--bucket") -> int:
    """``1h``, ``15m``, ``1d``, ``300`` (seconds): a width that divides a day."""
    try:
        seconds = units.parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None
    if seconds < 1 or seconds != int(seconds) or 86400 % int(seconds):
        raise UsageError(f"{option} {text}: must divide a day (1m, 5m, 15m, 1h, 1d …)")
    return int(seconds)


@dataclass(frozen=True)
class Buckets:
    """Buckets of ``width`` seconds, aligned on midnight of the log's clock."""

    width: int

    def start_of(self, ts: str) -> str:
        """The start of the bucket holding ``ts`` (``YYYY-MM-DD HH:MM:SS``)."""
        moment = dt.datetime.strptime(ts[:19], _FORMAT)
        seconds = int((moment - _EPOCH).total_seconds())
        return (_EPOCH + dt.timedelta(seconds=seconds - seconds % self.width)).strftime(_FORMAT)

    def end_of(self, start: str) -> str:
        return self.after(start)

    def after(self, start: str) -> str:
        """The start of the next bucket."""
        moment = dt.datetime.strptime(start, _FORMAT) + dt.timedelta(seconds=self.width)
        return moment.strftime(_FORMAT)

    def seconds_past_end(self, start: str, now: dt.datetime) -> float:
        """How long ago (by ``now``, naive, on the log's clock) the bucket ended."""
        end = dt.datetime.strptime(start, _FORMAT) + dt.timedelta(seconds=self.width)
        return (now - end).total_seconds()


def route(data: bytes, floor: str | None, buckets: Buckets) -> list[tuple[int, int, str | None]]:
    """Cut ``data`` (whole records) into ``(low, high, bucket start)`` pieces.

    A piece ends where a record whose ``# Time:`` lies in a later bucket than the
    current one begins. Records before the first ``# Time:`` feed ``floor`` (the
    bucket the source fed last); with no floor, the bucket of the first time found
    (None: the text has no time at all).
    """
    found = _TIME_LINE.findall(data)
    if not found:
        return [(0, len(data), floor)]
    times = _normalised(found)
    if floor is not None and max(times) < buckets.after(floor):
        return [(0, len(data), floor)]  # the usual case: the whole range in one bucket
    pieces: list[tuple[int, int, str | None]] = []
    current, low = floor, 0
    for match in _TIME_LINE.finditer(data):
        ts = _normalise(match.group(1))
        if ts is None:
            continue
        if current is not None and ts < buckets.after(current):
            continue
        start = buckets.start_of(ts)
        if current is None:
            current = start
            continue
        cut = data.rfind(SEPARATOR, 0, match.start() + 1)
        cut = 0 if cut < 0 else cut + len(SEPARATOR) - 1
        if cut > low:
            pieces.append((low, cut, current))
            low = cut
        current = start
    pieces.append((low, len(data), current))
    return pieces


_CACHE: dict[bytes, str | None] = {}


def _normalise(raw: bytes) -> str | None:
    """A ``# Time:`` value as ``YYYY-MM-DD HH:MM:SS`` (fractions and zone dropped)."""
    key = raw[:19]
    found = _CACHE.get(key, "")
    if found == "":
        if len(_CACHE) > 100_000:
            _CACHE.clear()
        found = _CACHE[key] = normalize_time(key)
    return found


def _normalised(raw: list[bytes]) -> list[str]:
    return [ts for ts in map(_normalise, raw) if ts is not None] or [""]
