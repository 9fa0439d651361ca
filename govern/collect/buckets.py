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
from govern.slowlog import SEPARATOR, banner_lines, normalize_time

_FORMAT = "%Y-%m-%d %H:%M:%S"
_EPOCH = dt.datetime(1970, 1, 1)
#: A ``# Time:`` header line; its value as written (pt reads the first 15 or 19 bytes). The
#: pattern starts with a literal newline so the regex engine searches for it at memchr
#: speed (``^`` with MULTILINE tries every position: 26 MB/s); a line at the very start of
#: the text is looked at apart.
_TIME_LINE = re.compile(rb"\n# Time: ([^\n]{15,19})")
_FIRST_TIME_LINE = re.compile(rb"# Time: ([^\n]{15,19})")


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


def route(
    data: bytes, floor: str | None, buckets: Buckets, end: int | None = None
) -> list[tuple[int, int, str | None]]:
    """Cut ``data[:end]`` (whole records) into ``(low, high, bucket start)`` pieces.

    A piece ends where a record whose ``# Time:`` lies in a later bucket than the
    current one begins. Records before the first ``# Time:`` feed ``floor`` (the
    bucket the source fed last); with no floor, the bucket of the first time found
    (None: the text has no time at all). When the last ``# Time:`` of the text is still
    in the floor's bucket, the text is taken as all of it (found from the end: a read
    of a busy log is not scanned twice); an earlier time past the bucket, followed by
    times back in it, then stays in it too.
    """
    end = len(data) if end is None else end
    if floor is not None:
        last = _last_time(data, end)
        if last is None or last < buckets.after(floor):
            return [(0, end, floor)]  # the usual case: the whole range in one bucket
    first = _FIRST_TIME_LINE.match(data, 0, end)
    matches = [(0, first.group(1))] if first else []
    matches += [(m.start() + 1, m.group(1)) for m in _TIME_LINE.finditer(data, 0, end)]
    if not matches:
        return [(0, end, floor)]
    pieces: list[tuple[int, int, str | None]] = []
    current, low = floor, 0
    for at, raw in matches:
        ts = _normalise(raw)
        if ts is None:
            continue
        if current is not None and ts < buckets.after(current):
            continue
        start = buckets.start_of(ts)
        if current is None:
            current = start
            continue
        cut = data.rfind(SEPARATOR, 0, at + 1)
        cut = 0 if cut < 0 else cut + len(SEPARATOR) - 1
        # A server banner ends a record for the digest (govern.slowlog): the event before
        # it stays in the current bucket; the banner goes with the time after it.
        banners = banner_lines(data, cut, at)
        if banners:
            cut = banners[0]
        if cut > low:
            pieces.append((low, cut, current))
            low = cut
        current = start
    pieces.append((low, end, current))
    return pieces


def _last_time(data: bytes, end: int) -> str | None:
    """The last ``# Time:`` of ``data[:end]``, normalised (None: none, or not a time)."""
    at = data.rfind(b"\n# Time: ", 0, end)
    pattern, start = (_TIME_LINE, at) if at >= 0 else (_FIRST_TIME_LINE, 0)
    found = pattern.match(data, start, end)
    return _normalise(found.group(1)) if found else None


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
