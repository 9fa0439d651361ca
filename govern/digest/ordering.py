"""``--order-by ATTRIBUTE:FUNCTION``: what ranks the classes of a digest, and the ranking.

The ranking is the report's order (and pt-query-digest's): classes with a Query_time,
best first, ties broken by query ID; classes without any Query_time are left out of the
ranking, in the order their source lists them. The native core ranks its own classes the
same way (native/src/total.rs).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from govern.errors import UsageError
from govern.fingerprint import query_id

ORDER_FUNCTIONS = ("sum", "max", "min", "avg", "cnt")


@dataclass(frozen=True, slots=True)
class ClassKey:
    """What ranking a class takes: its counts and the order-by attribute's figures."""

    index: int  # for ClassSource.class_at()
    fingerprint: bytes
    count: int
    reportable: bool  # the class has a Query_time metric
    #: (count, total, low, high) of the order-by attribute; None if the class lacks it.
    metric: tuple[int, int, int, int] | None


def parse_order_by(text: str) -> tuple[str, str]:
    attribute, _, function = text.partition(":")
    function = function or "sum"
    if not attribute or function not in ORDER_FUNCTIONS:
        raise UsageError(
            f"--order-by {text!r}: expected ATTRIBUTE:FUNCTION with FUNCTION one of "
            f"{', '.join(ORDER_FUNCTIONS)} (e.g. Query_time:sum, Rows_examined:max, Query_time:cnt)"
        )
    return attribute, function


def order_value(key: ClassKey, attribute: str, function: str) -> float:
    """What ``--order-by attribute:function`` ranks a class by (``key.metric`` is
    ``attribute``'s (count, total, low, high))."""
    metric = key.metric
    if function == "cnt":
        return float(metric[0] if metric else key.count if attribute == "Query_time" else 0)
    if metric is None or metric[0] == 0:
        return -math.inf
    count, total, low, high = metric
    if function == "sum":
        return float(total)
    if function == "max":
        return float(high)
    if function == "min":
        return float(low)
    return total / count


def rank(
    keys: Iterable[ClassKey], attribute: str, function: str
) -> tuple[list[ClassKey], list[ClassKey]]:
    """The keys of the classes with Query_time, best first (ties: query ID), and those
    without, in the order given."""
    reported: list[ClassKey] = []
    unreported: list[ClassKey] = []
    for key in keys:
        (reported if key.reportable else unreported).append(key)
    reported.sort(key=lambda k: (-order_value(k, attribute, function), query_id(k.fingerprint)))
    return reported, unreported
