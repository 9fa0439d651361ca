"""The figures people read of a class: seconds and counts, percentiles, runs, rows, fits.

Each turns a class's exact aggregates (micro-units, sketches: govern/digest/aggregate.py)
into the rounded numbers its ``govern.digest`` document shows (docs/json.md).
"""

from __future__ import annotations

from typing import Any

from govern import sketch
from govern.digest.aggregate import OTHER_VALUE, ClassAgg, Metric

#: Leading classes listed per class in ``sequence.leads`` (``state`` keeps them all).
LEADS_SHOWN = 5
QUANTILES = (("median", 0.5), ("p95", 0.95), ("p99", 0.99))
QUANTILE_LEVELS = tuple(q for _, q in QUANTILES)


def number(micro: float, decimal: bool) -> float | int:
    """A micro-unit value as the log wrote it: seconds (6 decimals) or a whole count."""
    if decimal:
        return round(micro / 1_000_000, 6)
    return round(micro / 1_000_000)


def sketched(metric: Metric) -> bool:
    """The sketch holds every value, so percentiles can be read. (Statistics tables give
    some classes sums only: govern collect's Performance Schema source without MySQL 8's
    histogram table.)"""
    return bool(metric.count) and sum(metric.buckets.values()) == metric.count


def metric_figures(metric: Metric) -> dict[str, Any]:
    figures: dict[str, Any] = {
        "count": metric.count,
        "sum": number(metric.total, metric.decimal),
        "min": number(metric.low, metric.decimal),
        "max": number(metric.high, metric.decimal),
        "avg": round(metric.total / metric.count / 1_000_000, 6) if metric.count else None,
    }
    values = metric.quantiles(QUANTILE_LEVELS) if sketched(metric) else [None] * len(QUANTILES)
    for (name, _), value in zip(QUANTILES, values, strict=True):
        figures[name] = None if value is None else number(value, metric.decimal)
    return figures


def rows_per_statement(agg: ClassAgg) -> dict[str, Any] | None:
    """Rows a statement carries or touches: VALUES tuples for INSERT/REPLACE … VALUES,
    rows affected for other writes, rows sent for reads (whichever the log has)."""
    for name, source in (
        ("Values_rows", "values"),
        ("Rows_affected", "rows_affected"),
        ("Rows_sent", "rows_sent"),
    ):
        metric = agg.metrics.get(name)
        if metric is None or not metric.count:
            continue
        if name == "Rows_affected" and not _writes(agg.fingerprint):
            continue
        return {
            "source": source,
            "avg": round(metric.total / metric.count / 1_000_000, 3),
            "median": number(metric.quantile(0.5), False) if sketched(metric) else None,
            "max": number(metric.high, False),
        }
    return None


def _writes(fingerprint: bytes) -> bool:
    return fingerprint.startswith((b"insert", b"replace", b"update", b"delete"))


def sequence_figures(agg: ClassAgg) -> dict[str, Any]:
    runs = agg.runs
    connections, exact = sketch.distinct_count(agg.connections)
    figures: dict[str, Any] = {
        "calls": runs.calls,
        "runs": runs.runs,
        "repeated_calls": runs.repeated_calls,
        "longest_run": runs.longest,
        "mean_run": round(runs.calls / runs.runs, 3) if runs.runs else None,
        "median_run": sketch.quantile(runs.lengths, 0.5, 1, runs.longest) if runs.runs else None,
        "p95_run": sketch.quantile(runs.lengths, 0.95, 1, runs.longest) if runs.runs else None,
        "connections": connections,
        "connections_exact": exact,
        "led_runs": sum(runs for runs, _ in runs.leads.values()),
        "led_calls": sum(calls for _, calls in runs.leads.values()),
        "leads": [
            {"id": lead, "runs": counts[0], "calls": counts[1]}
            for lead, counts in sorted(
                ((k, v) for k, v in runs.leads.items() if k != OTHER_VALUE),
                key=lambda item: (-item[1][1], item[0]),
            )[:LEADS_SHOWN]
        ],
    }
    return figures


def single_row_runs(agg: ClassAgg) -> dict[str, Any] | None:
    """Writes only: runs of the class's single-row statements on one connection."""
    if not _writes(agg.fingerprint):
        return None
    runs = agg.single_runs
    return {
        "calls": runs.calls,
        "runs": runs.runs,
        "repeated_calls": runs.repeated_calls,
        "longest_run": runs.longest,
        "mean_run": round(runs.calls / runs.runs, 3) if runs.runs else None,
    }


def distinct_texts(agg: ClassAgg) -> dict[str, Any] | None:
    """Distinct statement texts of a read class (what the query cache keys on)."""
    if not agg.texts:
        return None
    count, exact = sketch.distinct_count(agg.texts)
    return {"count": count, "exact": exact}


def overhead_figures(agg: ClassAgg) -> dict[str, Any]:
    line = agg.fit.line()
    return {
        "per_statement": None if line is None else round(line[0], 9),
        "per_row": None if line is None else round(line[1], 9),
        "statements": agg.fit.n,
    }
