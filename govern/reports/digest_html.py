"""The digest report (``govern digest --format html``): a slow log understood in a minute.

What pgBadger set as the bar, for MySQL and MariaDB: a summary with the top
findings, load over time with ``govern run``'s blind windows shaded, the top
classes by total time, and per class its metrics, Query_time histogram, sample
and findings. Only the top N classes get a detailed section; the rest are rows
in collapsed pages, so a digest of 100,000 classes still opens at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from govern import units
from govern.charts import Bar, Window, bar_chart, histogram, time_chart
from govern.digest.report import ClassFinding, Report, ReportClass
from govern.digest.timeline import log_epoch
from govern.html.components import Column, badge, code, details, figures, note, paged_table, table
from govern.html.markup import Markup, join, tag
from govern.html.page import Page, anchor
from govern.reports.windows import grouped, of_hosts

#: Rows of the "other classes" pages; classes beyond it are counted, not listed.
OTHER_LIMIT = 10_000
#: Findings listed in the summary (each class section lists its own).
SUMMARY_FINDINGS = 10
#: Hosts, users and schemas listed per class.
TOP_VALUES = 10
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def digest_report(
    digest: Report,
    *,
    windows: Sequence[Window] = (),
    top: int = 20,
    title: str | None = None,
    generated_at: datetime | None = None,
    trends: Markup | None = None,
) -> str:
    """The HTML page for a digest: classes in the digest's order (by total time); over a
    history store, ``trends`` (govern/reports/trends_html.py) after the load chart."""
    ranked = sorted(digest.classes, key=lambda c: (-c.total_time, c.id))
    shown, rest = ranked[:top], ranked[top:]
    page = Page(
        title or "Slow-log digest",
        ", ".join(digest.files) or digest.path,
        generated_at=generated_at,
    )
    windows = _in_span(of_hosts(windows, digest.hosts), digest)
    page.add("summary", "Summary", _summary(digest, ranked))
    page.add("load", "Load over time", _load(digest, windows))
    if trends is not None:
        page.add("trends", "Trends", trends)
    page.add(
        "top",
        f"Top {len(shown)} classes by total time",
        bar_chart(
            [
                Bar(
                    f"{rank}. {c.id[-16:]} {c.fingerprint}",
                    c.total_time,
                    detail=f"{c.fingerprint[:300]}\n{units.count(c.count, 'grouped')} queries, "
                    f"{units.duration(c.total_time, 'spaced')} total",
                    href=f"#{anchor('class', c.id)}",
                )
                for rank, c in enumerate(shown, start=1)
            ],
            label=f"Total query time of the top {len(shown)} classes",
            unit=lambda v: units.duration(v, "spaced"),
            label_width=380,
        ),
    )
    page.add(
        "classes",
        "Classes",
        join(
            _class_section(digest, c, rank, open=rank == 1) for rank, c in enumerate(shown, start=1)
        ),
    )
    if rest:
        page.add(
            "others",
            f"Other classes ({units.count(len(rest), 'grouped')})",
            _others(digest, rest, len(shown) + 1),
        )
    if windows:
        page.add("windows", f"Blind windows ({len(windows):,})", _window_table(windows))
    return page.render()


def _summary(digest: Report, ranked: list[ReportClass]) -> Markup:
    span = _span_seconds(digest)
    findings = _findings(ranked)
    parts: list[object] = [
        figures(
            [
                ("events", units.count(digest.events, "grouped")),
                ("classes", units.count(len(digest.classes), "grouped")),
                ("total query time", units.duration(digest.total_time, "spaced")),
                ("time span", units.duration(span, "spaced") if span is not None else "–"),
                (
                    "queries per second",
                    units.count(digest.events / span, "significant") if span else "–",
                ),
                ("findings", units.count(len(findings), "grouped")),
            ]
        ),
    ]
    if digest.first_seen:
        parts.append(
            note(f"From {digest.first_seen} to {digest.last_seen}; made by {digest.producer}.")
        )
    for text in _notes(digest):
        parts.append(note(text))
    if findings:
        shown = findings[:SUMMARY_FINDINGS]
        parts.append(tag("h3", f"Top findings ({len(shown)} of {len(findings)})"))
        parts.append(
            table(
                [Column("severity"), Column("rule"), Column("class"), Column("finding")],
                [
                    [
                        badge(f.severity),
                        f"{f.rule} {f.name}".strip(),
                        tag("a", cls.id[-16:], href=f"#{anchor('class', cls.id)}"),
                        f.message,
                    ]
                    for cls, f in shown
                ],
            )
        )
    return join(parts)


def _notes(digest: Report) -> list[str]:
    """What a reader should know about the classes shown: some were left out."""
    notes = []
    if digest.malformed:
        notes.append(
            f"{len(digest.malformed)} malformed events were skipped (govern digest lists them)."
        )
    other = digest.totals.other_events
    if other:
        notes.append(
            f"{other:,} events of classes beyond --max-classes are counted in one 'other' class."
        )
    if digest.omitted_classes:
        notes.append(
            f"{digest.omitted_classes} classes were left out of this saved digest (--top)."
        )
    return notes


def _findings(ranked: list[ReportClass]) -> list[tuple[ReportClass, ClassFinding]]:
    found = [(cls, f) for cls in ranked for f in cls.findings]
    rank = {id(cls): index for index, cls in enumerate(ranked)}
    found.sort(key=lambda item: (SEVERITY_ORDER.get(item[1].severity, 3), rank[id(item[0])]))
    return found


def _span_seconds(digest: Report) -> float | None:
    if not digest.first_seen or not digest.last_seen:
        return None
    try:
        return max(log_epoch(digest.last_seen) - log_epoch(digest.first_seen), 1.0)
    except ValueError:
        return None


def _in_span(windows: Sequence[Window], digest: Report) -> list[Window]:
    """The windows that overlap the log's time span (all when the log has no times)."""
    if not digest.first_seen or not digest.last_seen:
        return list(windows)
    try:
        first, last = log_epoch(digest.first_seen), log_epoch(digest.last_seen) + 60
    except ValueError:
        return list(windows)
    return [w for w in windows if w.start <= last and (w.end is None or w.end >= first)]


def _load(digest: Report, windows: Sequence[Window]) -> Markup:
    if digest.timeline is None or digest.timeline.empty:
        return note(
            "This digest has no timeline (events per minute), so load over time cannot be drawn."
        )
    step, times, qps, load = digest.timeline.dense()
    per = (
        "minute"
        if step == 60
        else units.duration(step, "spaced").replace(" 00 m", "").replace(" 00 s", "")
    )
    # Runs closer than a bucket cannot be told apart on the chart: one shaded area each.
    shaded = grouped(windows, step)
    parts: list[object] = [
        note(
            f"Averages per {per}. Shaded: blind windows recorded by govern run, when the slow "
            "log was off or its threshold raised — quiet there means unlogged, not idle — and, "
            "in green, stretches when the throttle held batch work back (runs less than a "
            "bucket apart share one area; every run is listed at the end)."
            if windows
            else f"Averages per {per}. No blind windows or throttle holds were recorded for "
            "this time range."
        ),
        time_chart(
            times,
            qps,
            label="Queries per second",
            unit=lambda v: units.count(v, "significant"),
            step=step,
            windows=shaded,
        ),
        time_chart(
            times,
            load,
            label="Query time per second (concurrent load)",
            unit=lambda v: f"{v:g}" if v >= 1 else units.count(v, "significant"),
            step=step,
            windows=shaded,
            colour="#E69F00",
        ),
    ]
    return join(parts)


def _window_table(windows: Sequence[Window]) -> Markup:
    """Every run's window, in time order, after the classes (pages of 100 when many)."""
    rows = [
        [
            w.label,
            _stamp(w.start),
            _stamp(w.end) if w.end is not None else "still open",
            units.duration((w.end or w.start) - w.start, "spaced") if w.end else "–",
            w.detail,
        ]
        for w in sorted(windows, key=lambda w: w.start)
    ]
    columns = [Column("window"), Column("from"), Column("to"), Column("for", True), Column("what")]
    if len(rows) <= 100:
        return table(columns, rows)
    return paged_table(columns, rows, noun="windows")


def _stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _metric_unit(name: str) -> Any:
    if name.lower().endswith("_time"):
        return lambda v: units.duration(v, "spaced")
    return lambda v: units.count(v, "significant")


def _metrics_table(cls: ReportClass) -> Markup:
    columns = [Column("attribute")] + [
        Column(name, True) for name in ("sum", "min", "avg", "median", "p95", "p99", "max")
    ]
    rows = []
    others = sorted(
        (name, stat)
        for name, stat in cls.metrics.items()
        if name not in ("Query_time", "Query_length")
    )
    for name, stat in [("Query_time", cls.query_time), *others]:
        unit = _metric_unit(name)
        rows.append(
            [
                name,
                *(
                    _cell(unit, getattr(stat, f))
                    for f in ("sum", "min", "avg", "median", "p95", "p99", "max")
                ),
            ]
        )
    for name, n in sorted((name, flag.yes) for name, flag in cls.flags.items()):
        rows.append(
            [
                name,
                f"{units.count(n, 'grouped')} yes",
                "",
                "",
                "",
                "",
                "",
                units.share(n / cls.count if cls.count else 0),
            ]
        )
    return table(columns, rows)


def _cell(unit: Any, value: float | None) -> str:
    return "–" if value is None else str(unit(value))


def _class_section(digest: Report, cls: ReportClass, rank: int, *, open: bool) -> Markup:
    part = cls.total_time / digest.total_time if digest.total_time else 0.0
    summary = join(
        [
            f"{rank}. ",
            tag("code", cls.id[-16:]),
            f" · {units.share(part, 1)} of the time · {units.count(cls.count, 'grouped')} queries"
            f" · p95 {units.duration(cls.query_time.p95, 'spaced')} · ",
            tag("code", cls.fingerprint[:140] + ("…" if len(cls.fingerprint) > 140 else "")),
            *(join([" ", badge(f.severity)]) for f in cls.findings[:1]),
        ]
    )
    body: list[object] = [
        figures(
            [
                ("queries", units.count(cls.count, "grouped")),
                ("share of time", units.share(part, 1)),
                ("total", units.duration(cls.total_time, "spaced")),
                ("avg", units.duration(cls.query_time.avg, "spaced")),
                ("p95", units.duration(cls.query_time.p95, "spaced")),
                ("max", units.duration(cls.query_time.max, "spaced")),
            ]
        ),
        note(
            f"Query ID {cls.id} · first seen {cls.first_seen or '–'} · last seen {cls.last_seen or '–'}"
        ),
        tag(
            "div",
            tag("div", _metrics_table(cls)),
            histogram(
                cls.histogram,
                label=f"Query_time histogram of {cls.id[-16:]}",
                unit=lambda v: units.count(v, "significant"),
            )
            if cls.histogram
            else None,
            class_="row",
        ),
        tag("h3", "Fingerprint"),
        code(cls.fingerprint),
    ]
    if cls.sample:
        attributes = ", ".join(f"{k} {v}" for k, v in cls.sample.attributes().items())
        body += [
            tag("h3", "Sample"),
            note(attributes) if attributes else None,
            code(cls.sample.query),
            note(cls.sample.plan_line()) if cls.sample.plan else None,
        ]
    if cls.findings:
        body.append(tag("h3", "Findings"))
        for finding in cls.findings:
            body.append(
                tag(
                    "p",
                    badge(finding.severity),
                    " ",
                    tag("strong", f"{finding.rule} {finding.name}"),
                    f" — {finding.message}",
                )
            )
            evidence = finding.evidence
            if evidence:
                body.append(
                    table(
                        [Column("evidence"), Column("value")],
                        [[k, _evidence(v)] for k, v in evidence.items()],
                    )
                )
    if cls.top_hosts:
        body.append(tag("h3", "Top hosts by time"))
        body.append(
            table(
                [
                    Column("host"),
                    Column("time", True),
                    Column("share", True),
                    Column("queries", True),
                ],
                [
                    [
                        share.host,
                        units.duration(share.query_time, "compact"),
                        units.share(share.query_time / cls.total_time if cls.total_time else 0),
                        units.count(share.count, "grouped"),
                    ]
                    for share in cls.top_hosts
                ],
            )
        )
    multi_host = len(cls.servers) > 1 or len(digest.hosts) > 1
    for title, values in (
        ("Hosts", _ranked(cls.servers) if multi_host else []),
        ("Clients", _ranked(cls.values.get("host"))),
        ("Users", _ranked(cls.values.get("user"))),
        ("Schemas", _ranked(cls.values.get("db"))),
    ):
        if values:
            body.append(tag("h3", f"Top {title.lower()}"))
            body.append(
                table(
                    [Column(title[:-1].lower()), Column("queries", True), Column("share", True)],
                    [
                        [
                            name,
                            units.count(n, "grouped"),
                            units.share(n / cls.count if cls.count else 0),
                        ]
                        for name, n in values[:TOP_VALUES]
                    ],
                )
            )
    return details(summary, *body, open=open, class_="class", id=anchor("class", cls.id))


def _ranked(values: dict[str, int] | None) -> list[tuple[str, int]]:
    """Most frequent first (ties: by name)."""
    return sorted((values or {}).items(), key=lambda kv: (-kv[1], kv[0]))


def _evidence(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _others(digest: Report, rest: list[ReportClass], first: int) -> Markup:
    listed = rest[:OTHER_LIMIT]
    rows = [
        [
            first + i,
            tag("code", c.id[-16:]),
            units.count(c.count, "grouped"),
            units.duration(c.total_time, "spaced"),
            units.share(c.total_time / digest.total_time if digest.total_time else 0.0, 1),
            units.duration(c.query_time.p95, "spaced"),
            tag("code", c.fingerprint[:200]),
        ]
        for i, c in enumerate(listed)
    ]
    columns = [
        Column("#", True),
        Column("query ID"),
        Column("queries", True),
        Column("total", True),
        Column("share", True),
        Column("p95", True),
        Column("fingerprint"),
    ]
    parts: list[object] = [
        note("Collapsed pages of 100 classes each; the JSON output has every class in full."),
        paged_table(columns, rows, page_size=100, first=first, noun="classes"),
    ]
    if len(rest) > len(listed):
        parts.append(
            note(
                f"{units.count(len(rest) - len(listed), 'grouped')} smaller classes are not "
                "listed here."
            )
        )
    return join(parts)
