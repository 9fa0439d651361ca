"""Axes: linear scales, "nice" tick values, and time ticks on whole minutes, hours or days."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class Linear:
    """Maps a data interval onto a pixel interval (either may be reversed)."""

    lo: float
    hi: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        if self.hi == self.lo:
            return self.start
        return self.start + (value - self.lo) / (self.hi - self.lo) * (self.end - self.start)


def nice_step(span: float, count: int) -> float:
    """A step of 1, 2 or 5 × 10^k giving about ``count`` intervals over ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return float(factor * power)
    return float(10 * power)  # pragma: no cover - the loop always returns


def nice_ticks(hi: float, count: int = 4) -> list[float]:
    """Ticks from 0 to the first nice value at or above ``hi`` (0..1 when there is no data)."""
    if hi <= 0 or not math.isfinite(hi):
        return [0.0, 1.0]
    step = nice_step(hi, count)
    ticks = [0.0]
    while ticks[-1] < hi * (1 - 1e-9):
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


#: Time tick steps in seconds, smallest first.
_TIME_STEPS = (
    1,
    5,
    10,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    2 * 86400,
    7 * 86400,
    30 * 86400,
)


def time_ticks(start: float, end: float, count: int = 6) -> list[tuple[float, str]]:
    """Ticks on round UTC times between ``start`` and ``end`` (epoch seconds), with labels.

    A label shows the date when the day changes (and on the first tick), else HH:MM.
    """
    span = max(end - start, 1.0)
    step = next((s for s in _TIME_STEPS if span / s <= count), _TIME_STEPS[-1])
    first = math.ceil(start / step) * step
    ticks: list[tuple[float, str]] = []
    previous_day = None
    value = float(first)
    while value <= end + 1e-6:
        moment = datetime.fromtimestamp(value, UTC)
        day = moment.date()
        if step >= 86400:
            label = moment.strftime("%Y-%m-%d")
        elif step < 60:
            label = moment.strftime("%H:%M:%S")
        else:
            label = moment.strftime("%H:%M")
        if previous_day is not None and day != previous_day and step < 86400:
            label = moment.strftime("%m-%d %H:%M")
        previous_day = day
        ticks.append((value, label))
        value += step
    return ticks


def offset_ticks(span: float, count: int = 8) -> list[float]:
    """Ticks for an elapsed-time axis from 0 to ``span`` seconds on round steps (1 s … 1 week)."""
    span = max(span, 1e-9)
    if span < 5:
        step = nice_step(span, count)
    else:
        step = float(next((s for s in _TIME_STEPS if span / s <= count), _TIME_STEPS[-1]))
    ticks = [0.0]
    while ticks[-1] + step <= span * (1 + 1e-9):
        ticks.append(round(ticks[-1] + step, 9))
    return ticks
