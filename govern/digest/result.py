"""A finished digest: its merged classes (an engine's :class:`ClassSource`), its inputs and
the options it was made with; the classes in report order.

Its ``govern.digest`` document is built by govern/digest/document.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from govern.digest.aggregate import ClassAgg, Metric
from govern.digest.classes import ClassSource
from govern.digest.ordering import ClassKey, parse_order_by

if TYPE_CHECKING:
    from govern.digest.report import HostShare


@dataclass
class Source:
    """An input as the report names it."""

    name: str
    host: str | None = None
    bytes: int = 0
    compression: str | None = None
    problems: list[str] = field(default_factory=list)
    stream: bool = False  # read once (stdin, a FIFO): ``bytes`` is not known


@dataclass
class Digest:
    """Everything a report needs: the merged aggregates, the inputs, the options used.

    Reports read the classes through ``partial``'s :class:`ClassSource` methods only
    (keys to rank them, one class at a time, the totals), never all at once.
    """

    partial: ClassSource
    sources: list[Source]
    order_by: str = "Query_time:sum"
    max_classes: int = 10_000
    since: str | None = None
    until: str | None = None
    filters: list[str] = field(default_factory=list)
    omitted_classes: int = 0  # classes a saved document left out (--top on a JSON digest)
    #: From a history store: each class's costliest hosts (class ID -> HostShare list),
    #: and the store read (``store`` member of the document).
    top_hosts: Mapping[str, Sequence[HostShare]] | None = None
    store: Mapping[str, Any] | None = None

    # -- ordering --------------------------------------------------------------------
    def keys(self) -> tuple[Sequence[ClassKey], Sequence[ClassKey]]:
        """The classes with Query_time, best first by ``order_by`` (ties: query ID), and
        those without (pt leaves them out of its report too), in the source's order."""
        return self.partial.ranked_keys(*parse_order_by(self.order_by))

    def ranked(self) -> Sequence[ClassKey]:
        """Keys of the classes with Query_time, best first (``partial.class_at(key.index)``)."""
        return self.keys()[0]

    def unreported(self) -> Sequence[ClassKey]:
        """Keys of the classes with no Query_time at all."""
        return self.keys()[1]

    def counts(self) -> tuple[int, int]:
        """(classes with Query_time, classes without)."""
        reported, unreported = self.keys()
        return len(reported), len(unreported)

    # -- totals ----------------------------------------------------------------------
    def total_query_time(self) -> int:
        """Query_time of the classes that have one, and of other (micro-units)."""
        return query_time_of(self.partial.totals())

    def window(self) -> tuple[str | None, str | None, float | None]:
        return window_of(self.partial.totals())

    def global_metrics(self) -> dict[str, Metric]:
        return self.partial.totals().metrics


def query_time_of(totals: ClassAgg) -> int:
    metric = totals.metrics.get("Query_time")
    return metric.total if metric is not None else 0


def window_of(totals: ClassAgg) -> tuple[str | None, str | None, float | None]:
    first = totals.ts_min or None
    last = totals.ts_max or None
    return first, last, seconds_between(first, last)


def seconds_between(first: str | None, last: str | None) -> float | None:
    if not first or not last:
        return None
    try:
        start = dt.datetime.strptime(first, "%Y-%m-%d %H:%M:%S")
        end = dt.datetime.strptime(last, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return (end - start).total_seconds()
