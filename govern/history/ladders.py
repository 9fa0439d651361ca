"""Aligned blocks of roll-ups: which blocks a window reads, which a roll-up builds.

A ladder is one kind of unit (the fleet's days, a host's days, the fleet's hours) with its
blocks of 2, 4, 8 … units aligned on the unit's number since 1970, each the merge of its two
halves. A block is valid while every unit in it that has data is fresh and the sum of their
versions is the one it was built from (a write bumps its unit's version), so a late bucket
invalidates exactly the blocks over it. A window of N units reads about 2·log2(N) rows a
class instead of N.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

DAY = 86400
HOUR = 3600
_EPOCH = dt.datetime(1970, 1, 1)
_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass(frozen=True)
class Ladder:
    """Where a kind of unit and its blocks are stored; ``host`` for a host's own ladder."""

    units: str  # the units' table: a row a unit, with stale, version and meta
    column: str  # the units' key column, also the blocks' ("day" or "start")
    blocks: str
    block_classes: str
    spans: tuple[int, ...]
    width: int  # seconds of a unit
    fleet: bool  # class rows carry every host's share (``hosts``)
    host: str | None = None

    def number(self, key: str) -> int:
        moment = dt.datetime.strptime(key[:19], _FORMAT if len(key) > 10 else "%Y-%m-%d")
        return int((moment - _EPOCH).total_seconds()) // self.width

    def key(self, number: int) -> str:
        moment = _EPOCH + dt.timedelta(seconds=number * self.width)
        return moment.date().isoformat() if self.width == DAY else moment.strftime(_FORMAT)

    def of(self, host: str) -> Ladder:
        return Ladder(self.units, self.column, self.blocks, self.block_classes, self.spans,
                      self.width, self.fleet, host)  # fmt: skip

    @property
    def where(self) -> str:
        """The SQL condition that keeps a host's ladder to its rows (after the key's)."""
        return "" if self.host is None else " AND host = ?"

    @property
    def args(self) -> tuple[str, ...]:
        return () if self.host is None else (self.host,)


FLEET_DAYS = Ladder(
    "history_fleet_days", "day", "history_fleet_blocks", "history_fleet_block_classes",
    (2, 4, 8, 16, 32, 64), DAY, fleet=True,
)  # fmt: skip
HOST_DAYS = Ladder(
    "history_days", "day", "history_host_blocks", "history_host_block_classes",
    (2, 4, 8, 16, 32, 64), DAY, fleet=False,
)  # fmt: skip
#: Blocks of 2 to 8 hours (8 divides a day): an edge of a window reads at most 5 units.
FLEET_HOURS = Ladder(
    "history_fleet_hours", "start", "history_fleet_hour_blocks",
    "history_fleet_hour_block_classes", (2, 4, 8), HOUR, fleet=True,
)  # fmt: skip
#: Each host's blocks of 2 to 8 hours (its hours are its buckets): the edges of a window over
#: a host glob or one host read at most 5 units a host instead of an hour each.
HOST_HOURS = Ladder(
    "history_host_hours", "start", "history_host_hour_blocks",
    "history_host_hour_block_classes", (2, 4, 8), HOUR, fleet=False,
)  # fmt: skip


def valid(
    spans: Iterable[tuple[int, int, int]], versions: dict[int, int], fresh: set[int]
) -> set[tuple[int, int]]:
    """The (start, span) of ``spans`` (start, span, versions built from) still valid."""
    found = set()
    for start, span, total in spans:
        known = [n for n in range(start, start + span) if n in versions]
        if all(n in fresh for n in known) and sum(versions[n] for n in known) == total:
            found.add((start, span))
    return found


def walk(
    ladder: Ladder, wanted: set[int], fresh: set[int], blocks: set[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The (start, span) to read for the ``wanted`` units: from each on, the longest valid
    block inside them, else the unit when fresh (span 1), else nothing (read from below)."""
    chosen = []
    skip_to = None
    for number in sorted(wanted):
        if skip_to is not None and number < skip_to:
            continue
        span = next(
            (
                n
                for n in reversed(ladder.spans)
                if (number, n) in blocks and all(u in wanted for u in range(number, number + n))
            ),
            1,
        )
        if span > 1 or number in fresh:
            chosen.append((number, span))
            skip_to = number + span
    return chosen


def to_build(
    span: int,
    versions: dict[int, int],
    fresh: set[int],
    have: dict[int, int],
    halves: set[tuple[int, int]],
    last: int,
    smallest: int = 2,
) -> list[tuple[int, int, tuple[int, ...]]]:
    """The blocks of ``span`` to (re)build: (start, versions, the halves that have data; for
    the ladder's ``smallest`` span, the units that have data), for blocks that end by
    ``last``, whose units with data are all fresh, and that are missing or were built from
    other versions (``have``: start -> versions)."""
    made = []
    for start in sorted({n // span * span for n in versions}):
        if start + span - 1 > last:
            continue
        known = [n for n in range(start, start + span) if n in versions]
        if not known or not all(n in fresh for n in known):
            continue
        total = sum(versions[n] for n in known)
        if have.get(start) == total:
            continue
        if span == smallest:  # from its units
            parts = tuple(known)
        else:
            half = span // 2
            parts = tuple(
                part
                for part in (start, start + half)
                if any(n in versions for n in range(part, part + half))  # no data: adds nothing
            )
            if not all((part, half) in halves for part in parts):
                continue
        made.append((start, total, parts))
    return made
