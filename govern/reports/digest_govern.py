"""Reads ``govern digest --format json`` (the ``govern.digest`` document) into the report model.

The digest engine owns that document (docs/json.md); this is the one place that
knows its fields, so the reports follow it when it changes. Optional parts are
read when present: ``timeline`` (``govern.reports.timeline.Timeline.to_json``)
and per-class ``findings`` (the digest rules).
"""

from __future__ import annotations

from typing import Any

from govern.errors import UsageError
from govern.reports.digest_input import Digest, QueryClass, Stat, number
from govern.reports.timeline import Timeline
from govern.reports.windows import epoch


def from_govern(path: str, document: dict[str, Any]) -> Digest:
    try:
        totals = document["totals"]
        window = document.get("window") or {}
        inputs = document.get("inputs") or []
        timeline = document.get("timeline")
        digest = Digest(
            path=path,
            producer="govern",
            events=int(totals["events"]),
            classes=[_class(raw) for raw in document["classes"]],
            total_time=float(totals["query_time"]),
            first_seen=window.get("first_seen"),
            last_seen=window.get("last_seen"),
            files=[str(i["name"]) for i in inputs],
            hosts=sorted({str(i["host"]) for i in inputs if i.get("host")}),
            timeline=_timeline(timeline) if timeline else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: a govern.digest document without a valid {exc}") from None
    malformed = len(document.get("malformed") or [])
    if malformed:
        digest.notes.append(
            f"{malformed} malformed events were skipped (govern digest lists them)."
        )
    other = int(totals.get("other_events") or 0)
    if other:
        digest.notes.append(
            f"{other:,} events of classes beyond --max-classes are counted in one 'other' class."
        )
    omitted = int(document.get("omitted_classes") or 0)
    if omitted:
        digest.notes.append(f"{omitted} classes were left out of this saved digest (--top).")
    return digest


def _timeline(raw: dict[str, Any]) -> Timeline | None:
    """``{step_s, minutes: [["YYYY-MM-DD HH:MM", events, query_time_s], …]}`` in log time.

    Log time is read as UTC (the state store's clock, where blind windows come from): a
    server that logs local time in another zone shows its windows shifted by the offset.
    """
    timeline = Timeline(int(raw["step_s"]))
    for minute, events, seconds in raw.get("minutes") or []:
        try:
            bucket = int(epoch(f"{minute}:00"))
        except ValueError:
            continue  # a log time govern cannot place on a clock
        timeline.counts[bucket] = timeline.counts.get(bucket, 0) + int(events)
        timeline.seconds[bucket] = timeline.seconds.get(bucket, 0.0) + float(seconds)
    return None if timeline.empty else timeline


def _stat(raw: dict[str, Any] | None) -> Stat:
    raw = raw or {}
    return Stat(
        *(number(raw.get(key)) for key in ("sum", "min", "max", "avg", "median", "p95", "p99"))
    )


def _ranked(values: dict[str, int] | None) -> list[tuple[str, int]]:
    return sorted(
        ((str(k), int(v)) for k, v in (values or {}).items()), key=lambda kv: (-kv[1], kv[0])
    )


def _class(raw: dict[str, Any]) -> QueryClass:
    metrics = {name: _stat(value) for name, value in (raw.get("metrics") or {}).items()}
    histogram = raw.get("histogram") or {}
    sample = raw.get("sample") or {}
    values = raw.get("values") or {}
    return QueryClass(
        id=str(raw["id"]),
        fingerprint=str(raw["fingerprint"]),
        count=int(raw["count"]),
        query_time=metrics.pop("Query_time", Stat()),
        metrics={k: v for k, v in metrics.items() if k != "Query_length"},
        flags={name: int(flag.get("yes", 0)) for name, flag in (raw.get("flags") or {}).items()},
        first_seen=raw.get("first_seen"),
        last_seen=raw.get("last_seen"),
        sample=sample.get("query"),
        sample_attributes={
            k: sample[k]
            for k in ("query_time", "ts", "db", "user", "host")
            if sample.get(k) is not None
        },
        histogram=list(
            zip(
                histogram.get("labels") or [],
                (int(n) for n in histogram.get("Query_time") or []),
                strict=False,
            )
        ),
        hosts=_ranked(raw.get("servers")),
        clients=_ranked(values.get("host")),
        users=_ranked(values.get("user")),
        databases=_ranked(values.get("db")),
        findings=list(raw.get("findings") or []),
    )
