"""The key-count floor: a template that makes far fewer jobs than on its recent nights
fails the night instead of running the few it made.

Stale sizing data (a replica that stopped applying, a cache table nobody refreshed)
does not look like an error: the query answers, with fewer keys. Compared with the
median of the template's last nights, tonight's count says whether the night is the
one the DBA expects. Nights that were refused are left out of the median, so a floor
never teaches itself the bad night (docs/design/scheduling.md, "Failing loudly").
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from govern.schedulers.catalog import Catalog

#: How many recent nights the median is taken over.
KEY_NIGHTS = 7


def template_keys(original: Catalog, expanded: Catalog) -> dict[str, int]:
    """How many jobs each [each.NAME] template made tonight."""
    counts = {t.name: 0 for t in original.templates}
    for job in expanded.jobs:
        if job.template is not None and job.template in counts:
            counts[job.template] += 1
    return counts


def floor_refusal(
    tonight: Mapping[str, int], recent: Sequence[Mapping[str, int]], floor: float
) -> str | None:
    """Why tonight's keys are too few (the night fails), or None. ``recent``: the
    template counts of past nights that ran, newest first."""
    if floor <= 0:
        return None
    short = []
    for name, count in tonight.items():
        past = [r[name] for r in recent if name in r]
        if not past:
            continue
        median = statistics.median(past)
        if count < floor * median:
            short.append(
                f"[each.{name}] made {count} jobs, under key_floor {floor:g} x {median:g}"
                f" (its median over the last {len(past)} nights)"
            )
    if not short:
        return None
    return (
        "too few sizing keys tonight, the sizing data may be stale: "
        + "; ".join(short)
        + " (set [sizing] key_floor = 0 for one night if the drop is real)"
    )
