"""Regressions: what a window (the last 24 hours) does worse than its baseline (the 7 days
before), per host and fleet-wide.

The judgement is pure: the classes of two spans (merged reports, or the store's lean figures
of govern/history/figures.py) and how many hours of data each covers go in,
:class:`Regression` objects come out (:func:`judge`); :func:`first_crossing` finds, in a
class's series, the first step of the window where the figure crossed. Only
:func:`find_regressions` reads a store.

Rules (docs/regressions.md): a class is *new* when the baseline never saw it and the window
counts at least ``min_count`` events; *slower* when its p95 or p99 grew by ``factor`` and by
at least ``min_time`` seconds (both sides with enough events that a quarter of ``min_count``
lie above the percentile: :meth:`Rules.floor`; the p99 of 150 events is its second-largest),
or its total time per hour of data grew by ``factor`` and by at least
``min_count × min_time`` over the window; its *plan changed* when the EXPLAIN of its worst
sample (govern collect --explain-on) shows a full scan the baseline's did not, or another key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from govern import units
from govern.digest.report import SampleQuery
from govern.history.bounds import value_range
from govern.history.figures import (
    Figures,
    Pair,
    Pieces,
    StateReader,
    find_worst,
    hours_with_data,
    load,
    span_figures,
)
from govern.history.model import TOP_HOSTS, Point
from govern.history.sql import SqlStore
from govern.history.store import HistoryStore

SCHEMA = "govern.regressions"
SCHEMA_VERSION = 1
#: The kinds of finding, in the order reports list them.
KINDS = ("new", "p95", "p99", "total_time", "plan")
STEP = 3600  # "the hour it changed"
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass(frozen=True)
class Rules:
    """What counts as a regression (defaults documented in docs/regressions.md)."""

    factor: float = 2.0
    min_count: int = 20
    min_time: float = 0.010  # seconds

    @property
    def min_total(self) -> float:
        """Added total time that counts: ``min_count`` calls each ``min_time`` slower."""
        return self.min_count * self.min_time

    def floor(self, quantile: float) -> int:
        """Events each side needs for its ``quantile`` to be judged: enough that at least a
        quarter of ``min_count`` (5 by default) lie above the nearest-rank percentile, so a
        few events stalled by a loaded host are not the percentile itself (the p99 of 150
        events is the second-largest; two stalls lift it). 100 for p95, 500 for p99 at the
        default ``min_count`` of 20."""
        above = -(-self.min_count // 4)
        share = 1000 - round(quantile * 1000)  # thousandths above it, as bounds.py ranks
        return max(self.min_count, -(-above * 1000 // share))

    def judged(self, *counts: int) -> tuple[bool, bool]:
        """Whether p95 and p99 are judged between sides of these event counts."""
        least = min(counts)
        return least >= self.floor(0.95), least >= self.floor(0.99)

    def to_json(self) -> dict[str, Any]:
        return {
            "factor": self.factor,
            "min_count": self.min_count,
            "min_time_s": self.min_time,
            "p95_min_count": self.floor(0.95),
            "p99_min_count": self.floor(0.99),
        }


@dataclass(frozen=True)
class Side:
    """A class's figures over the baseline or the window."""

    count: int
    total: float
    per_hour: float  # total time per hour of data
    p95: float | None
    p99: float | None
    plan: list[dict[str, Any]] | None  # the worst sample's EXPLAIN, per table

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "total_s": round(self.total, 6),
            "per_hour_s": round(self.per_hour, 6),
            "p95_s": _round(self.p95),
            "p99_s": _round(self.p99),
            "plan": self.plan,
        }


@dataclass
class Regression:
    """One class that got worse on one host (or fleet-wide: ``host`` None)."""

    host: str | None
    id: str
    fingerprint: str
    kinds: list[str]
    reasons: list[str]
    baseline: Side | None
    window: Side
    hosts: list[str] = field(default_factory=list)  # fleet-wide: where it regressed, or costs
    changed_at: datetime | None = None  # start of the first step where it crossed

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": "fleet" if self.host is None else "host",
            "host": self.host,
            "hosts": self.hosts,
            "id": self.id,
            "fingerprint": self.fingerprint,
            "kinds": self.kinds,
            "reasons": self.reasons,
            "changed_at": _time(self.changed_at),
            "baseline": None if self.baseline is None else self.baseline.to_json(),
            "window": self.window.to_json(),
        }


@dataclass(frozen=True)
class Span:
    """[since, until) and the hours in it that have data."""

    since: datetime
    until: datetime
    hours: float

    def to_json(self) -> dict[str, Any]:
        return {"since": _time(self.since), "until": _time(self.until), "hours": self.hours}


@dataclass
class Outcome:
    """Everything ``govern regressions`` found, per host then fleet-wide."""

    store: str
    baseline: Span
    window: Span
    rules: Rules
    hosts: list[str]
    pattern: str | None
    regressions: list[Regression]
    #: hosts left out, and why: no bucket in the baseline (collecting began in the window)
    #: or none in the window (the collector stopped)
    not_judged: dict[str, str] = field(default_factory=dict)

    @property
    def per_host(self) -> list[Regression]:
        return [r for r in self.regressions if r.host is not None]

    @property
    def fleet(self) -> list[Regression]:
        return [r for r in self.regressions if r.host is None]

    @property
    def counts(self) -> dict[str, int]:
        found = {kind: 0 for kind in KINDS}
        for regression in self.per_host:
            for kind in regression.kinds:
                found[kind] += 1
        return {"regressions": len(self.per_host), "fleet": len(self.fleet)} | found

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "store": self.store,
            "host_pattern": self.pattern,
            "hosts": self.hosts,
            "not_judged": [
                {"host": host, "reason": reason} for host, reason in self.not_judged.items()
            ],
            "baseline": self.baseline.to_json(),
            "window": self.window.to_json(),
            "rules": self.rules.to_json(),
            "counts": self.counts,
            "regressions": [r.to_json() for r in self.regressions],
        }


# --- the judgement ---------------------------------------------------------------------------


class Percentiles(Protocol):
    """A class's Query_time as judge reads it (a report's :class:`Stat`)."""

    @property
    def max(self) -> float | None: ...
    @property
    def p95(self) -> float | None: ...
    @property
    def p99(self) -> float | None: ...


class Judged(Protocol):
    """What :func:`judge` reads of a class: a report's (:class:`ReportClass`), or the store's
    lean figures (:class:`govern.history.figures.ClassFigures`), whose costly parts are read
    on first use: the percentiles past the count floor, the plan and fingerprint seldom."""

    @property
    def key(self) -> str: ...
    @property
    def id(self) -> str: ...
    @property
    def fingerprint(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def total_time(self) -> float: ...
    @property
    def query_time(self) -> Percentiles: ...
    @property
    def sample(self) -> SampleQuery | None: ...


class Classes(Protocol):
    @property
    def classes(self) -> Sequence[Judged]: ...


def plan_of(cls: Judged) -> list[dict[str, Any]] | None:
    """The worst sample's EXPLAIN, per table (None: not explained)."""
    sample = cls.sample
    plan = sample.plan if sample is not None else None
    if not plan:
        return None
    return [
        {name: table.get(name) for name in ("table", "access", "key", "rows")}
        for table in plan.get("tables") or ()
    ]


def side(cls: Judged, hours: float, *, plan: bool = True) -> Side:
    stat = cls.query_time
    return Side(
        count=cls.count,
        total=cls.total_time,
        per_hour=cls.total_time / hours if hours > 0 else 0.0,
        p95=stat.p95,
        p99=stat.p99,
        plan=plan_of(cls) if plan else None,
    )


def judge(
    baseline: Classes,
    window: Classes,
    *,
    baseline_hours: float,
    window_hours: float,
    rules: Rules,
    host: str | None,
) -> list[Regression]:
    """The classes of ``window`` that regressed against ``baseline``, costliest first."""
    before = {cls.key: cls for cls in baseline.classes}
    found: list[Regression] = []
    for cls in window.classes:
        if cls.count < rules.min_count or not cls.id:
            continue
        was_class = before.get(cls.key)
        if was_class is None or was_class.count == 0:
            found.append(
                Regression(
                    host,
                    cls.id,
                    cls.fingerprint,
                    ["new"],
                    [f"new: {units.count(cls.count, 'grouped')} events, not in the baseline"],
                    None,
                    side(cls, window_hours),
                )
            )
            continue
        # a percentile is at most the largest event: below min_time, neither p95 nor p99 can
        # have grown by min_time (and a percentile matters only past its count floor on
        # both sides), so a fast class's sketches are not merged unless it is a finding; nor
        # the baseline's when the window's p95 and p99 are below min_time; the exact
        # percentiles (which may need states) only when their bounds allow a rise
        peak = cls.query_time.max
        rule = (peak is None or peak >= rules.min_time) and _may_rise(was_class, cls, rules)
        if rule:
            now = side(cls, window_hours, plan=False)
            was = side(was_class, baseline_hours, plan=False)
            kinds, reasons = _slower(was, now, rules, window_hours)
        else:  # total time alone (most classes: no Side built)
            kinds, reasons = _total(
                was_class.total_time / baseline_hours if baseline_hours > 0 else 0.0,
                cls.total_time / window_hours if window_hours > 0 else 0.0,
                rules,
                window_hours,
            )
        # the baseline's plan matters only when the window's has one
        now_plan = plan_of(cls)
        was_plan = plan_of(was_class) if now_plan or kinds else None
        plan = plan_change(was_plan, now_plan)
        if plan:
            kinds.append("plan")
            reasons += plan
        if kinds:
            was = replace(side(was_class, baseline_hours, plan=False), plan=was_plan)
            now = replace(side(cls, window_hours, plan=False), plan=now_plan)
            found.append(Regression(host, cls.id, cls.fingerprint, kinds, reasons, was, now))
    found.sort(key=lambda r: (-(r.window.total - (r.baseline.total if r.baseline else 0)), r.id))
    return found


def bounds(cls: Judged) -> tuple[Pair, Pair]:
    """The lowest and highest a class's (p95, p99) can be: the lean figures may know them
    only to within a sketch bucket until states are read (figures.py); a report's are
    exact."""
    known = getattr(cls, "percentile_bounds", None)
    if known is not None:
        found: tuple[Pair, Pair] = known()
        return found
    stat = cls.query_time
    return (stat.p95, stat.p99), (stat.p95, stat.p99)


def _slower(was: Side, now: Side, rules: Rules, window_hours: float) -> tuple[list[str], list[str]]:
    kinds: list[str] = []
    reasons: list[str] = []
    judged = rules.judged(was.count, now.count)
    for kind, ok, old, new in zip(
        ("p95", "p99"), judged, (was.p95, was.p99), (now.p95, now.p99), strict=True
    ):
        if ok and rose(old, new, rules.factor, rules.min_time):
            assert old is not None and new is not None
            kinds.append(kind)
            reasons.append(f"{kind} {_times(old, new)}")
    more, why = _total(was.per_hour, now.per_hour, rules, window_hours)
    return kinds + more, reasons + why


def _total(
    was: float, now: float, rules: Rules, window_hours: float
) -> tuple[list[str], list[str]]:
    """The total-time rule on the time per hour of data of both sides."""
    added = (now - was) * window_hours
    if rose(was, now, rules.factor, 0.0) and added >= rules.min_total:
        return ["total_time"], [f"total time per hour {_times(was, now)}"]
    return [], []


def rose(old: float | None, new: float | None, factor: float, min_delta: float) -> bool:
    """``new`` is at least ``factor`` times ``old`` and ``min_delta`` above it."""
    if old is None or new is None:
        return False
    return new >= old * factor and new - old >= min_delta and new > old


def _times(old: float, new: float) -> str:
    ratio = f"×{new / old:,.1f}" if old > 0 else "from zero"
    return f"{units.duration(old, 'spaced')} → {units.duration(new, 'spaced')} ({ratio})"


def plan_change(
    before: Sequence[Mapping[str, Any]] | None, after: Sequence[Mapping[str, Any]] | None
) -> list[str]:
    """What changed between two EXPLAIN summaries: a full scan appeared, a key changed.
    Nothing when either side has no plan (the class was not explained)."""
    if not before or not after:
        return []
    was = {table.get("table"): table for table in before}
    changes = []
    for table in after:
        name = table.get("table")
        old = was.get(name)
        if old is None:
            continue
        if table.get("access") == "ALL" and old.get("access") != "ALL":
            key = f" on key {old['key']}" if old.get("key") else ""
            changes.append(f"plan: full scan of {name} appeared (was {old.get('access')}{key})")
        elif old.get("key") != table.get("key"):
            changes.append(
                f"plan: key of {name} changed ({old.get('key') or 'none'} →"
                f" {table.get('key') or 'none'})"
            )
    return changes


def first_crossing(
    points: Iterable[Point], regression: Regression, rules: Rules, step: int = STEP
) -> datetime | None:
    """Start of the first step of the window whose own figures cross every rule that
    ``regression`` broke and are each at least halfway from the baseline's figure to the
    window's (new: the first step with events); None when no single step does.

    Every rule, not any: one stalled statement in an hour of 25 lifts that hour's p99 (about
    its maximum) and its total time, not its p95. Halfway: a few statements stalled by a
    loaded host lift an hour of 25 past ``factor`` × a fast baseline + ``min_time``, not to
    where the changed hours are; under load both named the hour before a real change."""
    was, now = regression.baseline, regression.window
    for point in points:
        if point.count == 0:
            continue
        if was is None:
            return point.start
        crossed = [
            _crosses(kind, was, now, point, rules, step)
            for kind in regression.kinds
            if kind in ("p95", "p99", "total_time")
        ]
        if crossed and all(crossed):
            return point.start
    return None


def _crosses(kind: str, was: Side, now: Side, point: Point, rules: Rules, step: int) -> bool:
    if kind == "p95":
        return rose(was.p95, point.p95, rules.factor, rules.min_time) and _halfway(
            was.p95, now.p95, point.p95
        )
    if kind == "p99":
        return rose(was.p99, point.p99, rules.factor, rules.min_time) and _halfway(
            was.p99, now.p99, point.p99
        )
    usual, changed = was.per_hour * step / 3600, now.per_hour * step / 3600
    return rose(usual, point.query_time, rules.factor, 0.0) and _halfway(
        usual, changed, point.query_time
    )


def _halfway(was: float | None, now: float | None, value: float | None) -> bool:
    """``value`` is at least halfway from the baseline's figure to the window's (the
    window's unknown: no such bound)."""
    if was is None or now is None or value is None:
        return True
    return value >= (was + now) / 2


# --- over a store ----------------------------------------------------------------------------


def find_regressions(
    store: HistoryStore,
    *,
    baseline: timedelta,
    window: timedelta,
    until: datetime,
    pattern: str | None = None,
    rules: Rules | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> Outcome:
    """Each host's window against its own baseline, then the fleet's (with more than one
    host), each regression with the hour it changed. ``progress(host, hosts)`` is called as
    each host's judgement begins. Reads the store's lean figures (govern/history/figures.py),
    not merged reports."""
    if not isinstance(store, SqlStore):
        raise TypeError(f"{type(store).__name__}: govern regressions reads a SQL history store")
    rules = rules or Rules()
    window_since = until - window
    baseline_since = window_since - baseline
    hosts = store.hosts(baseline_since, until, pattern)
    hours = hours_with_data(store, baseline_since, until, hosts)
    read = StateReader(store)
    found: list[Regression] = []
    not_judged: dict[str, str] = {}
    pieces: Pieces = {}  # the window's hours the baseline's last day subtracts
    afters = span_figures(store, read, hosts, window_since, until, pieces=pieces)
    befores = span_figures(
        store, read, hosts, baseline_since, window_since, exact=_asked(afters, rules),
        pieces=pieces,
    )  # fmt: skip
    sides = [(host, befores[host], afters[host]) for host in hosts]
    spans = {host: _spans(hours[host], baseline_since, window_since, until) for host in hosts}
    for host, (before_span, after_span) in spans.items():
        if not before_span.hours or not after_span.hours:
            # without a baseline every class would be "new"; without a window, nothing ran
            not_judged[host] = "no bucket in the " + (
                "baseline" if not before_span.hours else "window"
            )
    prepare(read, [(before, after) for host, before, after in sides if host not in not_judged],
            rules)  # fmt: skip
    for host, before, after in sides:
        if progress:
            progress(host, len(hosts))
        if host in not_judged:
            continue
        before_span, after_span = spans[host]
        regressions = judge(
            before,
            after,
            baseline_hours=before_span.hours,
            window_hours=after_span.hours,
            rules=rules,
            host=host,
        )
        for regression in regressions:
            regression.hosts = [host]
            regression.changed_at = first_crossing(
                store.series(window_since, until, step=STEP, host=host, class_id=regression.id),
                regression,
                rules,
            )
        found += regressions
    baseline_span, window_span = _spans(hours[None], baseline_since, window_since, until)
    if len(hosts) - len(not_judged) > 1:
        fleet = _fleet(store, read, (baseline_span, window_span), pattern, rules, found, sides)
        # a class only hosts without a baseline run is theirs, not the fleet's news
        found += [r for r in fleet if not r.hosts or not set(r.hosts) <= not_judged.keys()]
    if len(hosts) == 1:
        baseline_span, window_span = _spans(hours[hosts[0]], baseline_since, window_since, until)
    return Outcome(store.url, baseline_span, window_span, rules, hosts, pattern, found, not_judged)


def _fleet(
    store: SqlStore,
    read: StateReader,
    spans: tuple[Span, Span],
    pattern: str | None,
    rules: Rules,
    per_host: list[Regression],
    sides: list[tuple[str, Figures, Figures]],
) -> list[Regression]:
    before_span, after_span = spans
    before = Figures.summed((part for _, part, _ in sides), read)
    window = Figures.summed((part for _, _, part in sides), read)
    prepare(read, [(before, window)], rules)
    regressions = judge(
        before,
        window,
        baseline_hours=before_span.hours,
        window_hours=after_span.hours,
        rules=rules,
        host=None,
    )
    where: dict[str, list[str]] = {}
    for regression in per_host:
        assert regression.host is not None
        where.setdefault(regression.id, []).append(regression.host)
    glob = pattern or "*"
    for regression in regressions:
        regression.hosts = where.get(regression.id) or _costliest(sides, regression.id)
        regression.changed_at = first_crossing(
            store.series(
                after_span.since, after_span.until, step=STEP, hosts=glob, class_id=regression.id
            ),
            regression,
            rules,
        )
    return regressions


def prepare(read: StateReader, spans: list[tuple[Figures, Figures]], rules: Rules) -> None:
    """Read in batches what :func:`judge` will ask of (baseline, window) pairs: the rows of
    the window's classes past the count floor that may have slowed (largest event at least
    ``min_time``; new, or with a baseline past the floor too, whose percentile bounds allow
    a rise: the rows' bucket columns bound them without a sketch, bounds.py), then the
    baseline's rows of those whose window p95 or p99 could have risen, and the worst states
    (plans) of the window's classes past the count floor whose worst row may hold a plan.
    Judging is the same without it, one round trip per class slower."""
    counted = [
        (cls, before.by_id.get(cls.id))
        for before, window in spans
        for cls in window.classes
        if cls.count >= rules.min_count and cls.id
    ]
    slow = [
        (cls, was)
        for cls, was in counted
        if cls.qt_max >= rules.min_time * 1_000_000
        # new (a finding), or both sides past a percentile's floor and bounds that allow
        # it a rise (a percentile finding possible)
        and (was is None or was.count == 0 or _may_rise(was, cls, rules))
    ]
    load(cls for cls, _ in slow)
    load(was for cls, was in slow if was is not None and was.count and _may_rise(was, cls, rules))
    # the worst rows only of classes with a row that may hold a plan, then their states
    planned = [cls for cls, _ in counted if cls.any_explained != 0]
    find_worst(planned)
    read.prefetch(cls.worst for cls in planned if cls.worst and cls.explained != 0)


def _asked(afters: dict[str, Figures], rules: Rules) -> dict[str, set[str]]:
    """Per host, the classes whose baseline's largest event, flags and percentile buckets
    :func:`judge` and :func:`prepare` will likely ask (figures.py reads the others' on
    first use, one query each): those past the count floor in the host's window, or in the
    fleet's, whose rows may hold a plan or whose p95 or p99 may reach ``min_time`` (by the
    rows' buckets, bounds.py)."""
    floor = rules.min_time * 1_000_000 - 1  # (a margin: a miss costs time, not a finding)
    fleet: dict[str, list[int]] = {}
    mine: dict[str, set[str]] = {}
    for host, window in afters.items():
        asked = mine[host] = set()
        for cls in window.classes:
            keys = cls.keys
            top = -1 if keys is None else max(keys[1], keys[3])  # -1: unknown
            planned = int(cls.any_explained != 0)
            if cls.count >= rules.min_count and (planned or _reaches(cls.qt_max, top, floor)):
                asked.add(cls.id)
            slot = fleet.get(cls.id)
            if slot is None:
                fleet[cls.id] = [cls.count, cls.qt_max, top, planned]
            else:
                slot[0] += cls.count
                slot[1] = max(slot[1], cls.qt_max)
                slot[2] = -1 if top < 0 or slot[2] < 0 else max(slot[2], top)
                slot[3] |= planned
    everywhere = {
        name
        for name, (count, qt_max, top, planned) in fleet.items()
        if count >= rules.min_count and (planned or _reaches(qt_max, top, floor))
    }
    return {host: asked | everywhere for host, asked in mine.items()}


def _reaches(qt_max: int, top: int, floor: float) -> bool:
    """A class's p95 or p99 may reach ``floor`` µs: its largest event does, and its highest
    percentile bucket (-1: unknown) too."""
    return qt_max >= floor and (top < 0 or value_range(top, top, qt_max)[1] >= floor)


def _may_rise(was: Judged, now: Judged, rules: Rules) -> bool:
    """A percentile judged on both sides (past its count floor) can be at least
    ``min_time`` in the window and have risen, by the bounds known so far (judge's test)."""
    judged = rules.judged(was.count, now.count)
    if not any(judged):
        return False
    high = bounds(now)[1]
    if not any(
        ok and new is not None and new >= rules.min_time
        for ok, new in zip(judged, high, strict=True)
    ):
        # no rise reaches min_time whatever the baseline's: its bounds are not worked out
        # (the fleet's would fold every host's cut day for them)
        return False
    low = bounds(was)[0]
    return any(
        ok and rose(old, new, rules.factor, rules.min_time)  # new >= min_time too
        for ok, old, new in zip(judged, low, high, strict=True)
    )


def _costliest(sides: list[tuple[str, Figures, Figures]], class_id: str) -> list[str]:
    """The hosts where a class cost most in the window (a report's ``top_hosts``)."""
    shares = []
    for host, _, window in sides:
        mine = window.by_id.get(class_id)
        if mine is not None and mine.count:
            shares.append((-mine.micro, -mine.count, host))
    return [host for _, _, host in sorted(shares)[:TOP_HOSTS]]


def _spans(
    hours: set[datetime], since: datetime, middle: datetime, until: datetime
) -> tuple[Span, Span]:
    """[since, middle) and [middle, until) with the hours of each that have data: total time
    is compared per hour of data, so a store that started collecting three days ago is not
    judged on seven."""
    before = sum(1 for hour in hours if hour < middle)
    return Span(since, middle, float(before)), Span(middle, until, float(len(hours) - before))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.strftime(TIME_FORMAT)
