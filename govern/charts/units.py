"""Numbers as people read them in reports: durations, counts, shares, rates."""

from __future__ import annotations

import math


def duration(seconds: float | None) -> str:
    """``850 µs``, ``12.5 ms``, ``3.21 s``, ``4 m 05 s``, ``2 h 10 m``, ``3 d 4 h``; ``–`` for None."""
    if seconds is None or not math.isfinite(seconds):
        return "–"
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    if s == 0:
        return "0 s"
    if s < 1e-3:
        return f"{sign}{s * 1e6:.0f} µs"
    if s < 1:
        return f"{sign}{_three(s * 1e3)} ms"
    if s < 60:
        return f"{sign}{_three(s)} s"
    if s < 3600:
        minutes, rest = divmod(round(s), 60)
        return f"{sign}{minutes} m {rest:02d} s"
    if s < 86400:
        hours, rest = divmod(round(s / 60), 60)
        return f"{sign}{hours} h {rest:02d} m"
    days, rest = divmod(round(s / 3600), 24)
    return f"{sign}{days} d {rest} h"


def _three(value: float) -> str:
    """Three significant digits: ``1.23``, ``12.3``, ``123``."""
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def count(value: float | None) -> str:
    """``987``, ``12.3k``, ``4.56M``, ``7.1G``; fractions keep two decimals below 10."""
    if value is None or not math.isfinite(value):
        return "–"
    sign = "-" if value < 0 else ""
    v = abs(value)
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= limit:
            return f"{sign}{_three(v / limit)}{suffix}"
    if v == int(v):
        return f"{sign}{int(v)}"
    return f"{sign}{v:.3g}"


def share(value: float | None, digits: int = 0) -> str:
    """A fraction 0..1 as a percentage: ``97%``, ``12.5%``."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value * 100:.{digits}f}%"


def integer(value: float | None) -> str:
    """Thousands separated: ``1,234,567``."""
    if value is None:
        return "–"
    return f"{round(value):,}"


def rate(value: float | None, unit: str = "/s") -> str:
    return "–" if value is None else f"{count(value)}{unit}"
