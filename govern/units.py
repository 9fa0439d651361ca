"""Durations, sizes and counts: one parser per kind for what people type, one printer per kind.

Every command reads ``90s`` or ``16M`` the same way and prints a figure in one of a few named
styles, so a figure looks alike wherever it appears (docs/design/layout.md, "One units module").
A printer picks its unit by the value as it will be shown, so a value never prints as
``1000.0ms`` or ``60 m 00 s``: it moves up to ``1.00s`` and ``1 h 00 m``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

#: The placeholder of a missing figure on pages and in comparisons (text tables print ``-``).
DASH = "–"

# --- parsing ------------------------------------------------------------------------------
_SECONDS = {
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}
_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")
_DURATION_PART = re.compile(rf"\s*({_NUMBER.pattern})\s*(us|µs|ms|s|m|h|d|w)")
DURATION_EXAMPLE = "a duration like 90, 90s, 15m, 1h30m or 500ms"

#: MySQL's option-file multiples (``max_allowed_packet=16M``): binary, case-insensitive.
_BYTES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?")
SIZE_EXAMPLE = "a size like 512, 64K, 16M or 1.5G"


def parse_duration(value: object) -> float:
    """Seconds from ``90``, ``"90s"``, ``"15m"``, ``"1h30m"``, ``"500ms"``, ``"250us"`` or ``"1w"``.

    A bare number is seconds; ``m`` is minutes. Raise ValueError with one wording for every
    command; the caller adds the option or file:line.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected {DURATION_EXAMPLE}, got {value!r}")
    if not isinstance(value, str):
        if value < 0 or not math.isfinite(value):
            raise ValueError(f"expected {DURATION_EXAMPLE}, got {value!r}")
        return float(value)
    text = value.strip().lower()
    if _NUMBER.fullmatch(text):
        return float(text)
    total, position = 0.0, 0
    while position < len(text):
        part = _DURATION_PART.match(text, position)
        if part is None:
            break
        total += float(part[1]) * _SECONDS[part[2]]
        position = part.end()
    if position == 0 or position < len(text):
        raise ValueError(f"expected {DURATION_EXAMPLE}, got {value!r}")
    return total


def parse_size(value: object) -> int:
    """Bytes from ``512``, ``"64K"``, ``"16M"``, ``"16MiB"`` or ``"1.5G"`` (binary multiples)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    found = _SIZE.fullmatch(value.strip().lower()) if isinstance(value, str) else None
    if found is None:
        raise ValueError(f"expected {SIZE_EXAMPLE}, got {value!r}")
    return round(float(found[1]) * _BYTES[found[2]])


# --- printing -----------------------------------------------------------------------------
def _three(value: float) -> str:
    """Three significant digits: ``1.23``, ``12.3``, ``123``."""
    return _fit(value, ((".2f", 10.0), (".1f", 100.0), (".0f", math.inf)))


def _fit(value: float, specs: tuple[tuple[str, float], ...]) -> str:
    """The first spec whose shown number stays below its bound."""
    text = ""
    for spec, below in specs:
        text = format(value, spec)
        if float(text.replace(",", "")) < below:
            break
    return text


def _whole_or(spec: str) -> Callable[[float], str]:
    """Whole numbers as such (``987``), others with ``spec`` (``2.5``, ``0.00512``)."""
    return lambda value: f"{value:.0f}" if value == int(value) else format(value, spec)


@dataclass(frozen=True)
class _Unit:
    """One unit of a style: ``scale`` base units each, for values shown below ``below``."""

    scale: float
    number: str | Callable[[float], str]  # a format spec, or a function of the scaled value
    suffix: str
    below: float = math.inf

    def show(self, value: float) -> tuple[str, float]:
        # units under 1 multiply (value * 1000 for ms) so the figures are the ones long printed
        scaled = value / self.scale if self.scale >= 1 else value * round(1 / self.scale)
        number = self.number(scaled) if callable(self.number) else format(scaled, self.number)
        return number + self.suffix, float(number.replace(",", ""))


@dataclass(frozen=True)
class _Pair:
    """Two units at once: ``4m05s``, ``2 h 10 m``, ``3 d 4 h`` (``template`` takes both)."""

    scale: float
    part: float
    template: str
    below: float = math.inf

    def show(self, value: float) -> tuple[str, float]:
        parts = round(value / self.part)
        per = round(self.scale / self.part)
        whole, rest = divmod(parts, per)
        return self.template.format(whole, rest), parts / per


@dataclass(frozen=True)
class _Style:
    units: tuple[_Unit | _Pair, ...]
    missing: str = "-"
    zero: str | None = None  # the text of exactly 0 when the first unit's is not wanted

    def show(self, value: float | None, missing: str | None) -> str:
        if value is None or not math.isfinite(value):
            return self.missing if missing is None else missing
        if value == 0 and self.zero is not None:
            return self.zero
        sign, value = ("-" if value < 0 else ""), abs(value)
        text = ""
        for unit in self.units:
            text, shown = unit.show(value)
            if shown < unit.below:
                break
        return sign + text


DurationStyle = Literal["compact", "clock", "spaced", "words"]
_DURATIONS: dict[str, _Style] = {
    # 85us, 340.0ms, 1.23s, 1,234s: digest tables and rule messages (pt-query-digest's habit)
    "compact": _Style(
        (
            _Unit(1e-6, ".0f", "us", 1000),
            _Unit(1e-3, ".1f", "ms", 1000),
            _Unit(1, ".2f", "s", 100),
            _Unit(1, ",.0f", "s"),
        )
    ),
    # 12.3s, 4m05s, 1h23m: elapsed times of jobs and runs in tables
    "clock": _Style(
        (
            _Unit(1, ".1f", "s", 60),
            _Pair(60, 1, "{}m{:02d}s", 60),
            _Pair(3600, 60, "{}h{:02d}m"),
        )
    ),
    # 850 µs, 12.5 ms, 3.21 s, 4 m 05 s, 2 h 10 m, 3 d 4 h: pages and digest comparisons
    "spaced": _Style(
        (
            _Unit(1e-6, ".0f", " µs", 1000),
            _Unit(1e-3, _three, " ms", 1000),
            _Unit(1, _three, " s", 60),
            _Pair(60, 1, "{} m {:02d} s", 60),
            _Pair(3600, 60, "{} h {:02d} m", 24),
            _Pair(86400, 3600, "{} d {} h"),
        ),
        missing=DASH,
        zero="0 s",
    ),
    # 45 s, 12 min, 6.0 h, 3.2 days: a window in a sentence
    "words": _Style(
        (
            _Unit(1, ".0f", " s", 120),
            _Unit(60, ".0f", " min", 120),
            _Unit(3600, ".1f", " h", 48),
            _Unit(86400, ".1f", " days"),
        )
    ),
}

CountStyle = Literal["compact", "significant", "grouped"]
_COUNTS: dict[str, _Style] = {
    # 987, 2.50, 12.3k, 4.6M: digest tables
    "compact": _Style(
        (
            _Unit(1, _whole_or(".2f"), "", 1000),
            _Unit(1e3, ".1f", "k", 1000),
            _Unit(1e6, ".1f", "M", 1000),
            _Unit(1e9, ".1f", "G"),
        )
    ),
    # 987, 2.5, 12.3k, 4.56M: pages
    "significant": _Style(
        (
            _Unit(1, _whole_or(".3g"), "", 1000),
            _Unit(1e3, _three, "k", 1000),
            _Unit(1e6, _three, "M", 1000),
            _Unit(1e9, _three, "G"),
        ),
        missing=DASH,
    ),
    # 1,234,567: exact counts (rows, events, queries)
    "grouped": _Style((_Unit(1, ",.0f", ""),)),
}

_SIZES = _Style(
    (
        _Unit(1, ".0f", " B", 1024),
        _Unit(1 << 10, _three, " KiB", 1024),
        _Unit(1 << 20, _three, " MiB", 1024),
        _Unit(1 << 30, _three, " GiB", 1024),
        _Unit(1 << 40, _three, " TiB"),
    )
)


def duration(seconds: float | None, style: DurationStyle) -> str:
    """A duration in one of the named styles (the style's placeholder for None)."""
    return _DURATIONS[style].show(seconds, None)


def count(value: float | None, style: CountStyle, missing: str | None = None) -> str:
    """A count in one of the named styles; ``missing`` (else the style's) for None."""
    return _COUNTS[style].show(value, missing)


def size(value: float | None, missing: str = "-") -> str:
    """Bytes in binary units: ``512 B``, ``1.50 KiB``, ``16.0 MiB``, ``4.20 GiB``."""
    return _SIZES.show(value, missing)


def plural(number: int, word: str, words: str | None = None) -> str:
    """``1 job``, ``2 jobs``, ``1,234 entries``: ``words`` when the plural is not ``word`` + s."""
    return f"{number:,} {word if number == 1 else words or word + 's'}"


def share(value: float | None, digits: int = 0, missing: str = "-") -> str:
    """A fraction 0..1 as a percentage: ``97%``, ``12.5%``."""
    if value is None or not math.isfinite(value):
        return missing
    return f"{value * 100:.{digits}f}%"
