"""A deadline as written in the catalog: ``"06:00"`` (a clock time) or ``"4h"`` (after the
night's start); docs/schedule.md, "Deadlines, pools, readiness and hooks".

A clock time is the first such time at or after the night's *scheduled* start (the cron fire
time under ``serve``, the start of a manual run), in the catalog's [schedule] timezone: a
night scheduled for 01:30 must be done by 06:00 the same morning, and one that started late at
07:00 for that 01:30 fire has missed its 06:00 already. A night starting at 23:00 gets the
next morning's 06:00.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from govern.units import parse_duration

_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?$")


@dataclasses.dataclass(frozen=True)
class Deadline:
    text: str  # as written in the catalog, for messages
    clock: tuple[int, int, int] | None  # hour, minute, second
    after: float | None  # seconds after the night's start

    def at(self, start: datetime, timezone: str | None = None) -> datetime:
        """The deadline of a night scheduled to start at ``start`` (an aware datetime)."""
        if self.after is not None:
            return start + timedelta(seconds=self.after)
        assert self.clock is not None
        local = start.astimezone(ZoneInfo(timezone)) if timezone else start.astimezone()
        hour, minute, second = self.clock
        due = local.replace(hour=hour, minute=minute, second=second, microsecond=0)
        if due < local.replace(microsecond=0):
            due = (local + timedelta(days=1)).replace(
                hour=hour, minute=minute, second=second, microsecond=0
            )  # zoneinfo gives the wall time its offset: across a DST change it stays 06:00
        return due


def parse_deadline(value: object) -> Deadline:
    """``"06:00"``, ``"06:00:30"`` or a duration (``"4h"``, ``"90m"``); ValueError otherwise."""
    if isinstance(value, str):
        found = _CLOCK.match(value.strip())
        if found:
            hour, minute, second = (int(g or 0) for g in found.groups())
            return Deadline(value, (hour, minute, second), None)
    try:
        after = parse_duration(value)
    except ValueError:
        raise ValueError(
            f'expected a clock time "HH:MM" or a duration after the start ("4h"), got {value!r}'
        ) from None
    return Deadline(str(value), None, after)
