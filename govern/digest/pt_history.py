"""What pt-query-digest writes in a review row and a history row, from a class of a
``govern.digest`` document: pt 3.x's values, column by column (docs/design/digest-pt-tables.md).

pt's history metrics (``EventAggregator::metrics``): ``cnt``, ``sum``, ``min``, ``max``,
``avg``, ``pct`` (the class's share of the attribute's events), and ``median``, ``pct_95``,
``stddev`` from its buckets. govern reads the same ranks from its sketch (pt's rank rules, its
special cases for one or two values and its stddev cap are kept), so they differ from pt's by
pt's 5% buckets, not by method. What pt leaves out is None here (NULL): an attribute the log
never has; ``cnt``/``sum``/``min``/``max`` of one this class lacks (its ``avg``, ``pct``,
``median``, ``pct_95`` and ``stddev`` are 0, as pt writes them).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from govern import sketch

#: Micro-units per unit in a document's ``state`` (govern/digest/aggregate.py).
_MICRO = 1_000_000
#: The metrics pt computes from its buckets: 0 (not NULL) for an attribute a class lacks.
_ZERO_WHEN_ABSENT = ("avg", "pct", "median", "pct_95", "stddev")


@dataclass(frozen=True)
class LogAttributes:
    """The attributes the whole digest saw, with their event counts (pt's ``pct``)."""

    numbers: dict[str, int] = field(default_factory=dict)
    flags: dict[str, int] = field(default_factory=dict)
    strings: dict[str, int] = field(default_factory=dict)
    timed: int = 0  # events with a time (pt's ts attribute)
    labelled: int = 0  # events of logs given a --host label (a hostname attribute)

    @classmethod
    def of(cls, document: Mapping[str, Any], classes: Iterable[Mapping[str, Any]]) -> LogAttributes:
        """From the document's totals, and the flags and values of its classes."""
        numbers = {name: int(m["count"]) for name, m in document["metrics"].items()}
        flags: dict[str, int] = {}
        strings: dict[str, int] = {}
        timed = labelled = 0
        for item in classes:
            labelled += sum(item["servers"].values())
            for name, flag in item["flags"].items():
                flags[name] = flags.get(name, 0) + int(flag["count"] or 0)
            for name, values in item["values"].items():
                strings[name] = strings.get(name, 0) + sum(values.values())
            if item["first_seen"] is not None:
                timed += int(item["count"])
        return cls(numbers, flags, strings, timed, labelled)


def datetime_text(ts: str | None) -> str | None:
    """A log time as pt writes it in a DATETIME column: ``YYYY-MM-DD HH:MM:SS``."""
    if ts is None:
        return None
    return ts[:19].replace("T", " ")


def review_row(item: Mapping[str, Any]) -> tuple[Any, ...]:
    """(checksum, fingerprint, sample, first_seen, last_seen) of a class, as pt writes them:
    the checksum is pt 3.x's query ID (32 hex, upper case: md5 of the fingerprint)."""
    sample = item["sample"]
    return (
        str(item["id"]).upper(),
        item["fingerprint"],
        sample["query"] if sample else "",
        datetime_text(item["first_seen"]),
        datetime_text(item["last_seen"]),
    )


def history_values(
    item: Mapping[str, Any], columns: Sequence[tuple[str, str]], seen: LogAttributes
) -> list[Any]:
    """The values pt writes in the columns ``(attribute, metric)`` for this class."""
    spreads: dict[str, Spread | None] = {}
    return [history_value(item, attr, metric, seen, spreads) for attr, metric in columns]


def history_value(
    item: Mapping[str, Any],
    attribute: str,
    metric: str,
    seen: LogAttributes,
    spreads: dict[str, Spread | None] | None = None,
) -> Any:
    """The value pt writes in column ``<attribute>_<metric>`` for this class (``spreads``:
    the class's spreads read so far, by attribute)."""
    if attribute == "ts":
        return _ts(item, metric, seen)
    if attribute in item["metrics"]:
        return _number(item, attribute, metric, seen.numbers[attribute], spreads)
    if attribute in item["flags"]:
        flag = item["flags"][attribute]
        return _flag(int(flag["yes"]), int(flag["count"] or 0), metric, seen.flags[attribute])
    if attribute in item["values"]:
        return _string(item["values"][attribute], metric, seen.strings[attribute])
    if attribute == "hostname" and item["servers"]:  # --host: Anemometer's hostname_max
        return _string(item["servers"], metric, seen.labelled)
    known = (
        attribute in seen.numbers
        or attribute in seen.flags
        or attribute in seen.strings
        or (attribute == "hostname" and seen.labelled > 0)
    )
    return 0 if known and metric in _ZERO_WHEN_ABSENT else None


def _ts(item: Mapping[str, Any], metric: str, seen: LogAttributes) -> Any:
    if item["first_seen"] is None:
        return 0 if seen.timed and metric in _ZERO_WHEN_ABSENT else None
    count = int(item["count"])
    found = {
        "cnt": count,
        "min": datetime_text(item["first_seen"]),
        "max": datetime_text(item["last_seen"]),
        "pct": count / seen.timed if seen.timed else 0,
    }
    return found.get(metric, 0 if metric in _ZERO_WHEN_ABSENT else None)


def _string(values: Mapping[str, int], metric: str, total: int) -> Any:
    count = sum(values.values())
    found = {
        "cnt": count,
        "min": min(values) if values else None,
        "max": max(values) if values else None,
        "pct": count / total if total else 0,
    }
    return found.get(metric, 0 if metric in _ZERO_WHEN_ABSENT else None)


def _flag(yes: int, count: int, metric: str, total: int) -> Any:
    """A Yes/No attribute: pt counts Yes as 1, No as 0, and keeps no buckets of it."""
    found = {
        "cnt": count,
        "sum": yes,
        "min": 1 if count and yes == count else 0,
        "max": 1 if yes else 0,
        "avg": yes / count if yes and count else 0,
        "pct": count / total if total else 0,
    }
    return found.get(metric, 0 if metric in _ZERO_WHEN_ABSENT else None)


def _number(
    item: Mapping[str, Any],
    attribute: str,
    metric: str,
    total: int,
    spreads: dict[str, Spread | None] | None,
) -> Any:
    figures = item["metrics"][attribute]
    count = int(figures["count"])
    if metric == "cnt":
        return count
    if metric in ("sum", "min", "max"):
        return figures[metric]
    if metric == "avg":
        return figures["sum"] / count if figures["sum"] and count else 0
    if metric == "pct":
        return count / total if total else 0
    if metric not in ("median", "pct_95", "stddev"):
        return None  # rank: pt has no such metric
    if spreads is None:
        spreads = {}
    if attribute not in spreads:
        spreads[attribute] = Spread.of(item["state"]["metrics"][attribute])
    spread = spreads[attribute]
    if spread is None:
        return 0
    value: float = getattr(spread, metric)()
    return round(value / _MICRO, 12)  # unrounded: FLOAT keeps 7 digits of a 1 µs spread


@dataclass(frozen=True)
class Spread:
    """A class's values of one attribute (micro-units, from the sketch), read as pt reads
    its buckets (``EventAggregator::_calc_metrics``)."""

    count: int
    total: int
    low: int
    high: int
    buckets: list[tuple[int, int]]  # (key, count), ascending
    whole: bool  # a count (rows, bytes): a value is a whole number of units

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> Spread | None:
        buckets = sorted((int(k), int(n)) for k, n in state["buckets"])
        count = int(state["count"])
        if not count or sum(n for _, n in buckets) != count:
            return None  # sums only (govern collect's statistics tables): no spread
        low, high = int(state["min"]), int(state["max"])
        return cls(count, int(state["sum"]), low, high, buckets, not state["decimal"])

    def _value(self, key: int) -> float:
        """What a bucket stands for, within [low, high]; a count's, a whole number."""
        value = min(self.high, max(self.low, sketch.bucket_value(key)))
        if self.whole:
            value = round(value / _MICRO) * _MICRO
        return float(value)

    def _at(self, rank: int) -> tuple[float, int]:
        """The value at 1-based ascending ``rank`` and how many values share its bucket."""
        if rank >= self.count:
            return float(self.high), self.buckets[-1][1]
        seen = 0
        for key, times in self.buckets:
            seen += times
            if seen >= rank:
                return (float(self.low) if rank == 1 else self._value(key)), times
        return float(self.high), self.buckets[-1][1]

    def _cutoff(self) -> int:
        return int(self.count * 0.95) if self.count >= 10 else self.count

    def pct_95(self) -> float:
        if self.count <= 2 or self.low == self.high:
            return float(self.high)
        return self._at(self._cutoff())[0]

    def median(self) -> float:
        if self.count == 1 or self.low == self.high:
            return float(self.high)
        if self.count == 2:
            return (self.low + self.high) / 2
        rank = self.count // 2 + 1
        value, alone = self._at(rank)
        if self._cutoff() % 2 == 0 and alone == 1:  # pt: the mean with the next bucket up
            value = (value + self._at(rank + 1)[0]) / 2
        return value

    def stddev(self) -> float:
        if self.count == 1 or self.low == self.high:
            return 0.0
        if self.count == 2:
            mean = (self.low + self.high) / 2
            return math.sqrt(((self.high - mean) ** 2) * 2)
        mean = self.total / self.count
        squares = 0.0
        for key, times in self.buckets:
            squares += times * (self._value(key) - mean) ** 2
        return min(math.sqrt(squares / self.count), (self.high - self.low) / 2)
