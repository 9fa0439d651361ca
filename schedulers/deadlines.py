"""The deadlines of one night as times, and the plan's predicted misses (the catalog's
:class:`~govern.schedulers.catalog.deadline.Deadline` resolved against the night's start)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from govern.schedulers.catalog.deadline import Deadline, parse_deadline
from govern.units import duration

if TYPE_CHECKING:
    from govern.schedulers.catalog import Catalog

__all__ = ["Deadline", "Due", "due_times", "parse_deadline"]


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
