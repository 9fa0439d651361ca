"""``govern digest compare``: which query classes are new, gone, slower or faster.

For a release check (a slow log from the test run before and after) or a morning
report (yesterday against the day before). Classes match on their query ID (the
16-hex short form, so govern's and pt-query-digest's IDs match each other). A
class is slower when its p95 or its total time grew by at least the threshold
*and* by at least ``min_time`` seconds: relative changes of tiny numbers are
noise, absolute changes of large ones are not news.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from govern import units
from govern.digest.report import Report, ReportClass

COMPARE_SCHEMA = "govern.digest.compare"
SCHEMA_VERSION = 1
STATUSES = ("new", "gone", "slower", "faster", "unchanged")


@dataclass(frozen=True)
class Side:
    count: int
    total: float
    p95: float | None
    share: float  # of the digest's total time

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "total_s": round(self.total, 6),
            "p95_s": None if self.p95 is None else round(self.p95, 6),
            "share": round(self.share, 6),
        }


@dataclass
class Change:
    id: str
    fingerprint: str
    status: str
    before: Side | None
    after: Side | None
    reasons: list[str] = field(default_factory=list)

    @property
    def p95_change(self) -> float | None:
        return _relative(
            self.before.p95 if self.before else None, self.after.p95 if self.after else None
        )

    @property
    def total_change(self) -> float | None:
        return _relative(
            self.before.total if self.before else None, self.after.total if self.after else None
        )

    @property
    def total_delta(self) -> float:
        return (self.after.total if self.after else 0.0) - (
            self.before.total if self.before else 0.0
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "fingerprint": self.fingerprint,
            "status": self.status,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            "p95_change": _round(self.p95_change),
            "total_change": _round(self.total_change),
            "total_delta_s": round(self.total_delta, 6),
            "reasons": self.reasons,
        }


@dataclass
class Comparison:
    before: Report
    after: Report
    threshold: float
    min_time: float
    changes: list[Change]

    def of(self, status: str) -> list[Change]:
        return [c for c in self.changes if c.status == status]

    @property
    def counts(self) -> dict[str, int]:
        return {status: len(self.of(status)) for status in STATUSES}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": COMPARE_SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "before": _digest_json(self.before),
            "after": _digest_json(self.after),
            "threshold": self.threshold,
            "min_time_s": self.min_time,
            "counts": self.counts,
            "classes": [c.to_json() for c in self.changes if c.status != "unchanged"],
        }


def _digest_json(digest: Report) -> dict[str, Any]:
    return {
        "path": digest.path,
        "producer": digest.producer,
        "events": digest.events,
        "classes": len(digest.classes),
        "total_s": round(digest.total_time, 6),
        "first_seen": digest.first_seen,
        "last_seen": digest.last_seen,
    }


def _relative(old: float | None, new: float | None) -> float | None:
    if old is None or new is None or old <= 0:
        return None
    return (new - old) / old


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _side(cls: ReportClass, digest: Report) -> Side:
    total = cls.total_time
    return Side(
        count=cls.count,
        total=total,
        p95=cls.query_time.p95,
        share=total / digest.total_time if digest.total_time > 0 else 0.0,
    )


def compare_digests(
    before: Report, after: Report, *, threshold: float = 0.2, min_time: float = 0.001
) -> Comparison:
    """Every class of either digest with its status; slower first (by added time)."""
    old = {c.key: c for c in before.classes}
    new = {c.key: c for c in after.classes}
    changes: list[Change] = []
    for key, cls in new.items():
        if key not in old:
            changes.append(Change(cls.id, cls.fingerprint, "new", None, _side(cls, after)))
            continue
        was = old[key]
        change = Change(cls.id, cls.fingerprint, "unchanged", _side(was, before), _side(cls, after))
        grew, shrank = _judge(change, threshold, min_time)
        if grew:
            change.status, change.reasons = "slower", grew
        elif shrank:
            change.status, change.reasons = "faster", shrank
        changes.append(change)
    for key, cls in old.items():
        if key not in new:
            changes.append(Change(cls.id, cls.fingerprint, "gone", _side(cls, before), None))
    order = {
        status: index
        for index, status in enumerate(("slower", "new", "gone", "faster", "unchanged"))
    }
    changes.sort(key=lambda c: (order[c.status], -abs(c.total_delta), c.id))
    return Comparison(before, after, threshold, min_time, changes)


def _judge(change: Change, threshold: float, min_time: float) -> tuple[list[str], list[str]]:
    """Reasons the class got slower, and reasons it got faster."""
    assert change.before is not None and change.after is not None
    grew: list[str] = []
    shrank: list[str] = []
    for name, old, new in (
        ("p95", change.before.p95, change.after.p95),
        ("total time", change.before.total, change.after.total),
    ):
        if old is None or new is None:
            continue
        delta = new - old
        relative = delta / old if old > 0 else float("inf")
        before, after = units.duration(old, "spaced"), units.duration(new, "spaced")
        text = f"{name} {_signed(relative)} ({before} → {after})"
        if delta >= min_time and relative >= threshold:
            grew.append(text)
        elif -delta >= min_time and -relative >= threshold / (1 + threshold):
            # Symmetric: 20% slower then "faster" undoes it exactly (1/1.2 = −16.7%).
            shrank.append(text)
    return grew, shrank


def _signed(relative: float) -> str:
    return "new" if relative == float("inf") else f"{relative * 100:+.0f}%"
