"""``govern digest merge``: saved digests back into aggregates, merged.

A saved ``govern.digest`` document keeps each class's exact aggregates (``state``), so
its classes become :class:`ClassAgg` objects again and merge as the segments of one
digest do (``aggregate.merge``): merged percentiles are those of one digest of all the
logs. The documents come checked from the loader (govern/digest/load.py), so reading
them back cannot fail half-way; what version 1 added after its first documents
(``timeline``, ``state.texts``, ``state.single_runs``, run leads) may be absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from govern import sketch
from govern.digest.aggregate import ClassAgg, Fit, Malformed, Metric, Partial, Runs, Sample, merge
from govern.digest.report import Report
from govern.digest.result import Digest, Source
from govern.errors import UsageError


def merge_reports(reports: Sequence[Report], *, max_classes: int, order_by: str) -> Digest:
    """Saved digests combined: classes by query ID, sketches added, inputs listed in order."""
    total = Partial()
    sources: list[Source] = []
    omitted = 0
    for report in reports:
        document = report.document
        if document is None:
            raise UsageError(
                f"{report.path}: a {report.producer} digest cannot be merged: it keeps no "
                "mergeable state (merge digests saved by govern digest --format json)"
            )
        part, saved = partial_of(document)
        part.shift_files(len(sources))
        part.ts_seen = part.db_seen = True
        merge(total, part, max_classes=max_classes)
        sources.extend(saved)
        omitted += document["omitted_classes"]
    return Digest(
        partial=total,
        sources=sources,
        order_by=order_by,
        max_classes=max_classes,
        omitted_classes=omitted,
    )


def merge_sourced(
    partial: Partial,
    sources: list[Source],
    part: Partial,
    part_sources: Sequence[Source],
    *,
    max_classes: int,
) -> list[int]:
    """Merge ``part`` (consumed) into ``partial`` where the same input comes again (the
    buckets of one log, the hours of one host): the files its samples and malformed entries
    point at are renumbered into ``sources``, an input already there (same name and host)
    counted once, its bytes added. Returns where each of ``part_sources`` went."""
    mapping = [_source_index(sources, source) for source in part_sources]
    for agg in part.all_classes():
        if agg.sample is not None and agg.sample.file < len(mapping):
            agg.sample.file = mapping[agg.sample.file]
    for bad in part.malformed_kept:
        if bad.file < len(mapping):
            bad.file = mapping[bad.file]
    part.ts_seen = part.db_seen = True
    merge(partial, part, max_classes=max_classes)
    return mapping


def _source_index(sources: list[Source], source: Source) -> int:
    for index, mine in enumerate(sources):
        if mine.name == source.name and mine.host == source.host:
            mine.bytes += source.bytes
            mine.problems.extend(p for p in source.problems if p not in mine.problems)
            return index
    sources.append(
        Source(source.name, source.host, source.bytes, source.compression, list(source.problems))
    )
    return len(sources) - 1


def partial_of(document: Mapping[str, Any]) -> tuple[Partial, list[Source]]:
    """A checked document's classes as aggregates, and its inputs (also how govern collect
    reads back the open buckets of its checkpoint)."""
    sources = [
        Source(
            name=item["name"],
            host=item["host"],
            bytes=item["bytes"],
            compression=item["compression"],
            problems=list(item["problems"]),
        )
        for item in document["inputs"]
    ]
    names = {s.name: index for index, s in enumerate(sources)}
    partial = Partial()
    for item in document["classes"]:
        agg = item if isinstance(item, ClassAgg) else _class(item, names)
        mine = partial.classes.get(agg.fingerprint)
        if mine is None:
            partial.classes[agg.fingerprint] = agg
        else:  # the same class from several stored buckets (govern/history)
            mine.merge(agg)
    if document["other"]:
        partial.other = _class(document["other"], names, other=True)
    for item in document["unreported"]:
        agg = ClassAgg(item["fingerprint"].encode("utf-8", "surrogateescape"), count=item["count"])
        partial.classes[agg.fingerprint] = agg
    for minute, events, query_time in (document.get("timeline") or {}).get("minutes", []):
        partial.minutes[str(minute)] = [int(events), round(float(query_time) * 1_000_000)]
    totals = document["totals"]
    partial.events = totals["events"]
    partial.filtered = totals["filtered"]
    partial.no_statement = totals["no_statement"]
    partial.malformed = totals["malformed"]
    partial.banners = totals.get("banners", 0)  # absent in documents of an older govern
    partial.malformed_kept = [
        Malformed(names.get(bad["file"], 0), bad["line"], bad["reason"])
        for bad in document["malformed"]
    ]
    return partial, sources


def class_of_document(item: Mapping[str, Any], names: Mapping[str, int]) -> ClassAgg:
    """One class document as an aggregate (govern/history reads stored classes with it);
    ``names`` maps input names to their indexes."""
    return _class(item, names)


def _class(item: Mapping[str, Any], names: Mapping[str, int], other: bool = False) -> ClassAgg:
    state = item["state"]
    raw = state.get("fingerprint_hex")
    fingerprint = b"" if other else bytes.fromhex(raw) if raw else item["fingerprint"].encode()
    agg = ClassAgg(
        fingerprint, count=item["count"], ts_min=item["first_seen"], ts_max=item["last_seen"]
    )
    for name, m in state["metrics"].items():
        agg.metrics[name] = Metric(
            count=m["count"],
            total=m["sum"],
            low=m["min"],
            high=m["max"],
            buckets=sketch.from_pairs(m["buckets"]),
            decimal=m["decimal"],
        )
    agg.booleans = {name: [v["yes"], v["count"]] for name, v in item["flags"].items()}
    agg.strings = {name: dict(values) for name, values in item["values"].items()}
    agg.servers = dict(item["servers"])
    agg.histogram = list(item["histogram"]["Query_time"])
    agg.runs = _runs(state["runs"])
    agg.single_runs = _runs(state.get("single_runs"))
    agg.connections = set(map(int, state["connections"], repeat(16)))
    agg.texts = set(map(int, state.get("texts", []), repeat(16)))
    agg.fit = Fit(*state["fit"])
    sample = item["sample"]
    if sample is not None:
        agg.sample = Sample(
            query_time=state["sample_query_time"],
            query=sample["query"].encode("utf-8", "surrogateescape"),
            ts=sample["ts"],
            db=sample["db"],
            user=sample["user"],
            host=sample["host"],
            file=names.get(sample["file"], 0),
            line=sample["line"],
            truncated=sample["truncated"],
            plan=sample.get("plan"),
        )
    return agg


def _runs(state: Mapping[str, Any] | None) -> Runs:
    if state is None:  # a document saved before version 1 had runs of single-row writes
        return Runs()
    return Runs(
        runs=state["runs"],
        calls=state["calls"],
        repeated_calls=state["repeated_calls"],
        longest=state["longest"],
        lengths=sketch.from_pairs(state["lengths"]),
        leads={lead: [int(n) for n in counts] for lead, counts in state.get("leads", {}).items()},
    )
