"""Deadlines: ``deadline = "06:00"`` (a clock time) or ``"4h"`` (after the night's start).

A clock time is the first such time at or after the night's *scheduled* start (the cron fire
time under ``serve``, the start of a manual run), in the catalog's [schedule] timezone: a
night scheduled for 01:30 must be done by 06:00 the same morning, and one that started late at
07:00 for that 01:30 fire has missed its 06:00 already. A night starting at 23:00 gets the
next morning's 06:00.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from govern.units import duration, parse_duration

if TYPE_CHECKING:
    from govern.schedulers.catalog import Catalog

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
            )
            # a DST change in between: the wall clock time is what the DBA wrote
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


@dataclasses.dataclass(frozen=True)
class Due:
    """The deadlines of one night, as times: the night's own and each job's."""

    night: datetime | None
    jobs: dict[str, datetime]

    def predicted_misses(self, base: datetime, finishes: Mapping[str, float]) -> list[str]:
        """Warnings for the jobs (and the night) predicted to finish after their deadline,
        given finish offsets from ``base``."""
        warnings = []
        for name, due in self.jobs.items():
            if name in finishes:
                late = (base + timedelta(seconds=finishes[name]) - due).total_seconds()
                if late > 0:
                    warnings.append(
                        f"job {name} is predicted to finish at {_clock(base, finishes[name])},"
                        f" {duration(late, 'clock')} after its deadline {_shown(due)}"
                    )
        if self.night is not None and finishes:
            end = max(finishes.values())
            late = (base + timedelta(seconds=end) - self.night).total_seconds()
            if late > 0:
                warnings.append(
                    f"the night is predicted to end at {_clock(base, end)},"
                    f" {duration(late, 'clock')} after its deadline {_shown(self.night)}"
                )
        return warnings


def due_times(catalog: Catalog, start: datetime) -> Due:
    """When the night scheduled to start at ``start`` and each of its jobs must be done."""
    timezone = catalog.schedule.timezone if catalog.schedule else None
    night = catalog.deadline.at(start, timezone) if catalog.deadline else None
    jobs = {j.name: j.deadline.at(start, timezone) for j in catalog.jobs if j.deadline}
    return Due(night, jobs)


def _clock(base: datetime, offset: float) -> str:
    return _shown(base + timedelta(seconds=offset))


def _shown(when: datetime) -> str:
    return when.isoformat(timespec="seconds")
