"""``govern digest compare --format html``: the comparison as a page."""

from __future__ import annotations

from datetime import datetime

from govern import units
from govern.charts import Pair, paired_bars
from govern.html.components import Column, badge, figures, note, table
from govern.html.markup import tag
from govern.html.page import Page
from govern.reports.compare import Comparison
from govern.reports.compare_output import HEADERS, SECTIONS, cells, describe, headline

#: Classes drawn in the before/after chart: the largest changes of total time.
CHART_CLASSES = 25


def compare_report(comparison: Comparison, *, generated_at: datetime | None = None) -> str:
    counts = comparison.counts
    page = Page(
        "Slow-log digest compared",
        f"{comparison.before.path} → {comparison.after.path}",
        generated_at=generated_at,
    )
    page.add(
        "summary",
        "Summary",
        tag(
            "ul",
            tag("li", "before: ", describe(comparison.before)),
            tag("li", "after: ", describe(comparison.after)),
        ),
        figures(
            [
                ("slower", counts["slower"]),
                ("new", counts["new"]),
                ("gone", counts["gone"]),
                ("faster", counts["faster"]),
                ("unchanged", counts["unchanged"]),
                (
                    "total time",
                    f"{units.duration(comparison.before.total_time, 'spaced')} → "
                    f"{units.duration(comparison.after.total_time, 'spaced')}",
                ),
            ]
        ),
        note(headline(comparison)),
    )
    changed = sorted(
        (c for c in comparison.changes if c.status != "unchanged"),
        key=lambda c: -abs(c.total_delta),
    )[:CHART_CLASSES]
    page.add(
        "chart",
        "Largest changes of total time",
        paired_bars(
            [
                Pair(
                    f"{c.id[-16:]} {c.status}",
                    c.before.total if c.before else None,
                    c.after.total if c.after else None,
                    detail=f"{c.status}: {c.fingerprint[:300]}\n" + "\n".join(c.reasons),
                    flag=c.status in ("slower", "new"),
                )
                for c in changed
            ],
            label="Total time per class, before and after",
            names=("before", "after"),
            unit=lambda v: units.duration(v, "spaced"),
        ),
    )
    for status, title in SECTIONS:
        changes = comparison.of(status)
        if not changes:
            continue
        columns = [Column(h, numeric=i > 0) for i, h in enumerate(HEADERS)]
        columns += [Column("why"), Column("fingerprint")]
        rows = [
            [*cells(c), "; ".join(c.reasons) or badge(status), tag("code", c.fingerprint[:500])]
            for c in changes
        ]
        page.add(status, f"{title} ({len(changes)})", table(columns, rows))
    return page.render()
