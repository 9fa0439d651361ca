"""A bucket document as store rows, and rows back: compact blobs beside plain figures.

A class row keeps the figures a query filters or sums on as columns (count, total and
largest Query_time in microseconds) and everything a merge needs in one blob, the
class's aggregate (its ``state``), no figures for people (percentiles are recomputed from
the merged sketches). The Query_time
sketch is also kept apart, so a series of one class reads a few hundred bytes a bucket.
What is not a class (inputs, totals, timeline, ``other``, ``unreported``, malformed
events) is the bucket's ``meta`` blob.

The state is written in a binary form (:func:`encode_agg`): the aggregate's own
figures as plain tuples, dicts and sets of ints and strings, ``marshal``-ed and
zlib-compressed behind a version byte. Reading it back is a C-level load with nothing to
parse (no JSON, no sketch pairs rebuilt, no hex hashes), which was 57% of a roll-up's
time with the JSON form. Version 2 (:data:`STATE_V2`) keeps the distinct-count hashes
(random 64-bit words, most of the state and incompressible) packed before the zlib part:
inflating them cost more than merging them. States written before (version 1, and zlib
JSON, the document's form) are still read (:func:`decode_class` tells them apart by their
first byte). Version 3 (:data:`STATE_V3`) is version 2 without zlib, written for roll-ups
only: a report reads mostly roll-up rows, and inflating one cost as much as merging it;
buckets (most rows, read only at a window's edges) stay compressed.
"""

from __future__ import annotations

import json
import marshal
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from govern import sketch
from govern.digest.aggregate import ClassAgg, Fit, Metric, Runs, Sample
from govern.digest.document import build_document
from govern.digest.merge import class_of_document
from govern.digest.result import Digest, Source
from govern.fingerprint import decode, query_id

#: What partial_of reads of a class document (govern/digest/merge.py, ``_class``): the
#: older JSON form of a class state, still read (tests write it to check that).
CLASS_KEYS = (
    "id",
    "fingerprint",
    "count",
    "first_seen",
    "last_seen",
    "state",
    "flags",
    "values",
    "servers",
    "histogram",
    "sample",
)
#: What partial_of reads of the rest of a document.
META_KEYS = ("inputs", "other", "unreported", "timeline", "totals", "malformed")


def pack(value: Any) -> bytes:
    return zlib.compress(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode(), 6)


def unpack(blob: bytes | None) -> Any:
    """A blob's JSON value; a class state in the binary form as its document's parts
    (:func:`state_document`), so readers of one state read either form."""
    if blob is None:
        return None
    if blob[:1] in BINARY:
        return state_document(blob)
    return json.loads(zlib.decompress(blob))


#: First byte of a binary class state (a zlib stream starts with 0x78: the JSON form):
#: version 1 is zlib(marshal); version 2 is two u16 counts, the connections' and the
#: texts' hashes as little-endian u64 ascending, then zlib(marshal) with None in their
#: places (the native merge reads both, native/src/stored.rs).
#: Version 3 is version 2 with its marshal part as it is (roll-ups: no inflate to read).
STATE_V1 = b"\x01"
STATE_V2 = b"\x02"
STATE_V3 = b"\x03"
BINARY = (STATE_V1, STATE_V2, STATE_V3)
#: The payloads whose distinct-count hashes are packed before the ``marshal`` part.
_PACKED = (STATE_V2, STATE_V3)
_COUNTS = struct.Struct("<HH")
_WORD = 1 << 64


def _runs_tuple(runs: Runs) -> tuple[Any, ...]:
    return (runs.runs, runs.calls, runs.repeated_calls, runs.longest, runs.lengths, runs.leads)


def _runs_of(value: tuple[Any, ...]) -> Runs:
    runs, calls, repeated, longest, lengths, leads = value
    return Runs(runs, calls, repeated, longest, lengths, leads)


def encode_class(item: Mapping[str, Any]) -> bytes:
    """A class document's state in the binary form (what partial_of makes of it)."""
    sample = item.get("sample")
    return encode_agg(class_of_document(item, {}), None if sample is None else sample["file"])


def encode_agg(agg: ClassAgg, sample_file: str | None, *, compress: bool = True) -> bytes:
    """An aggregate's state in the binary form; its sample's input is kept by name
    (``sample_file``, None if unknown: an index is the reader's). ``compress=False``
    (roll-ups) writes version 3: no zlib, so reading it needs no inflate."""
    sample = agg.sample
    value = (
        agg.fingerprint,
        agg.count,
        agg.ts_min,
        agg.ts_max,
        {
            name: (m.count, m.total, m.low, m.high, m.buckets, m.decimal)
            for name, m in agg.metrics.items()
        },
        agg.booleans,
        agg.strings,
        agg.servers,
        agg.histogram,
        None
        if sample is None
        else (
            sample.query_time,
            sample.query,
            sample.ts,
            sample.db,
            sample.user,
            sample.host,
            sample_file,
            sample.line,
            sample.truncated,
            None if sample.plan is None else json.dumps(sample.plan, ensure_ascii=False),
        ),
        _runs_tuple(agg.runs),
        _runs_tuple(agg.single_runs),
        None,
        None,
        (agg.fit.n, agg.fit.sx, agg.fit.sy, agg.fit.sxx, agg.fit.sxy),
    )
    connections, texts = sorted(agg.connections), sorted(agg.texts)
    if _packable(connections) and _packable(texts):
        data = marshal.dumps(value, 4)
        return b"".join(
            (
                STATE_V2 if compress else STATE_V3,
                _COUNTS.pack(len(connections), len(texts)),
                struct.pack(f"<{len(connections) + len(texts)}Q", *connections, *texts),
                zlib.compress(data, 6) if compress else data,
            )
        )
    whole = (*value[:12], agg.connections, agg.texts, value[14])
    return STATE_V1 + zlib.compress(marshal.dumps(whole, 4), 6)


def _packable(hashes: list[int]) -> bool:
    return not hashes or (len(hashes) < 1 << 16 and hashes[0] >= 0 and hashes[-1] < _WORD)


def _split(blob: bytes) -> tuple[int, int, int]:
    """A version 2 or 3 state's counts of hashes and where its marshal part starts."""
    connections, texts = _COUNTS.unpack_from(blob, 1)
    return connections, texts, 5 + 8 * (connections + texts)


def _load(blob: bytes) -> tuple[Any, ...]:
    if blob[:1] == STATE_V1:
        value: tuple[Any, ...] = marshal.loads(zlib.decompress(memoryview(blob)[1:]))
        return value
    return load_payload(payload(blob))


def load_payload(data: bytes) -> tuple[Any, ...]:
    """The tuple of a :func:`payload` (version 2's and 3's hashes put back in their places)."""
    if data[:1] not in _PACKED:
        value: tuple[Any, ...] = marshal.loads(data)
        return value
    connections, texts, start = _split(data)
    hashes = struct.unpack_from(f"<{connections + texts}Q", data, 5)
    head = marshal.loads(memoryview(data)[start:])
    return (*head[:12], set(hashes[:connections]), set(hashes[connections:]), head[14])


def state_document(blob: bytes) -> dict[str, Any]:
    """A binary class state as the parts of its class document that readers of one state
    use (govern/history/figures.py: fingerprint, sample, the metrics' exact figures and
    sketches), the keys and forms of the older JSON state."""
    fingerprint, count, ts_min, ts_max, metrics, *_, sample, _, _, _, _, _ = _load(blob)
    document: dict[str, Any] = {
        "id": query_id(fingerprint),
        "fingerprint": decode(fingerprint),
        "count": count,
        "first_seen": ts_min,
        "last_seen": ts_max,
        "state": {
            "metrics": {
                name: {
                    "count": m_count,
                    "sum": total,
                    "min": low,
                    "max": high,
                    "buckets": sketch.to_pairs(buckets),
                    "decimal": decimal,
                }
                for name, (m_count, total, low, high, buckets, decimal) in metrics.items()
            }
        },
        "sample": None,
    }
    if sample is not None:
        query_time, query, ts, db, user, host, file, line, truncated, plan = sample
        document["state"]["sample_query_time"] = query_time
        found = document["sample"] = {
            "query": decode(query),
            "query_time": round(query_time / 1_000_000, 6),
            "ts": ts,
            "db": db,
            "user": user,
            "host": host,
            "file": file,
            "line": line,
            "truncated": truncated,
        }
        if plan is not None:
            found["plan"] = json.loads(plan)
    return document


def state_summary(blob: bytes) -> tuple[str, dict[str, Any] | None, int | None]:
    """(fingerprint, the sample's plan, Query_time's exact minimum) of a class state in
    either form: what govern regressions reads of most states, without building the rest
    of the document (the metrics' sketches as pairs were 60% of reading one)."""
    if blob[:1] != STATE_V1:
        document = unpack(blob)
        metric = ((document.get("state") or {}).get("metrics") or {}).get("Query_time")
        plan = (document.get("sample") or {}).get("plan")
        low = None if not metric else int(metric["min"])
        return str(document.get("fingerprint") or ""), plan, low
    fingerprint, _, _, _, metrics, *_, sample, _, _, _, _, _ = _load(blob)
    metric = metrics.get("Query_time")
    plan = None if sample is None or sample[9] is None else json.loads(sample[9])
    return decode(fingerprint), plan, None if metric is None else int(metric[2])


def decode_class(blob: bytes, names: Mapping[str, int]) -> ClassAgg:
    """A stored class state as an aggregate, either form; ``names`` maps the unit's input
    names to their indexes (the sample's file)."""
    if blob[:1] not in BINARY:
        return class_of_document(unpack(blob), names)
    return agg_of(_load(blob), names)


def payload(item: bytes | Mapping[str, Any]) -> bytes:
    """The ``marshal`` payload of a class state in any form (a binary or JSON blob, or a
    class document): what the native merge reads."""
    if not isinstance(item, bytes):
        item = encode_class(item)
    elif item[:1] not in BINARY:
        item = encode_class(unpack(item))
    if item[:1] == STATE_V1:
        return zlib.decompress(memoryview(item)[1:])
    if item[:1] == STATE_V3:  # version 2's payload as it is stored: read as it is
        return item
    start = _split(item)[2]
    return item[:start] + zlib.decompress(memoryview(item)[start:])


def agg_of(value: Sequence[Any], names: Mapping[str, int]) -> ClassAgg:
    """A binary state's loaded tuple as an aggregate (see :func:`decode_class`)."""
    (
        fingerprint,
        count,
        ts_min,
        ts_max,
        metrics,
        booleans,
        strings,
        servers,
        histogram,
        sample,
        runs,
        single_runs,
        connections,
        texts,
        fit,
    ) = value
    agg = ClassAgg(fingerprint, count=count, ts_min=ts_min, ts_max=ts_max)
    agg.metrics = {
        name: Metric(count, total, low, high, buckets, decimal)
        for name, (count, total, low, high, buckets, decimal) in metrics.items()
    }
    agg.booleans = booleans
    agg.strings = strings
    agg.servers = servers
    agg.histogram = histogram
    if sample is not None:
        query_time, query, ts, db, user, host, file, line, truncated, plan = sample
        agg.sample = Sample(
            query_time=query_time,
            query=query,
            ts=ts,
            db=db,
            user=user,
            host=host,
            file=names.get(file, 0),
            line=line,
            truncated=truncated,
            plan=None if plan is None else json.loads(plan),
        )
    agg.runs = _runs_of(runs)
    agg.single_runs = _runs_of(single_runs)
    agg.connections = connections
    agg.texts = texts
    agg.fit = Fit(*fit)
    return agg


@dataclass(frozen=True, slots=True)
class ClassRow:
    class_id: str
    count: int
    query_time: int  # microseconds
    qt_max: int
    qt_sketch: bytes | None
    state: bytes


@dataclass(frozen=True, slots=True)
class BucketRows:
    events: int
    query_time: int  # microseconds, every event
    qt_sketch: bytes | None  # Query_time of every class, merged
    meta: bytes
    classes: list[ClassRow]


def query_time_of(item: Mapping[str, Any]) -> tuple[int, int, dict[int, int]]:
    """(sum, max, sketch) of a class document's Query_time, in microseconds."""
    metric = item["state"]["metrics"].get("Query_time")
    if metric is None:
        return 0, 0, {}
    return int(metric["sum"]), int(metric["max"]), sketch.from_pairs(metric["buckets"])


def bucket_rows(document: Mapping[str, Any]) -> BucketRows:
    """The rows of one ``govern.digest`` document (a bucket, or a roll-up's)."""
    rows = []
    total: dict[int, int] = {}
    for item in document["classes"]:
        qt_sum, qt_max, buckets = query_time_of(item)
        sketch.merge_into(total, buckets)
        rows.append(
            ClassRow(
                item["id"],
                int(item["count"]),
                qt_sum,
                qt_max,
                pack(sketch.to_pairs(buckets)) if buckets else None,
                encode_class(item),
            )
        )
    other = document.get("other")
    if other:
        sketch.merge_into(total, query_time_of(other)[2])
    meta = {key: document.get(key) for key in META_KEYS}
    totals = document["totals"]
    return BucketRows(
        events=int(totals["events"]),
        query_time=round(float(totals["query_time"]) * 1_000_000),
        qt_sketch=pack(sketch.to_pairs(total)) if total else None,
        meta=pack(meta),
        classes=rows,
    )


def _file_name(sources: Sequence[Source], sample: Sample | None) -> str | None:
    """The name of a sample's input, as its class document gives it."""
    if sample is None or sample.file >= len(sources):
        return None
    return sources[sample.file].name


def digest_rows(digest: Digest) -> BucketRows:
    """The rows of a merged digest (a roll-up): each class's state is encoded from its
    aggregate, with no class document built (the document gives the meta only)."""
    document = build_document(digest)
    document["unreported"] = list(document["unreported"])
    partial, sources = digest.partial, digest.sources
    rows = []
    total: dict[int, int] = {}
    for key in digest.ranked():
        agg = partial.class_at(key.index)
        metric = agg.metrics.get("Query_time")
        qt_sum, qt_max, buckets = (
            (0, 0, {}) if metric is None else (metric.total, metric.high, metric.buckets)
        )
        sketch.merge_into(total, buckets)
        sample = agg.sample
        rows.append(
            ClassRow(
                query_id(key.fingerprint),
                agg.count,
                qt_sum,
                qt_max,
                pack(sketch.to_pairs(buckets)) if buckets else None,
                encode_agg(agg, _file_name(sources, sample), compress=False),
            )
        )
    other = partial.other
    if other is not None and "Query_time" in other.metrics:
        sketch.merge_into(total, other.metrics["Query_time"].buckets)
    totals = document["totals"]
    return BucketRows(
        events=int(totals["events"]),
        query_time=round(float(totals["query_time"]) * 1_000_000),
        qt_sketch=pack(sketch.to_pairs(total)) if total else None,
        meta=pack({key: document.get(key) for key in META_KEYS}),
        classes=rows,
    )


def sketch_of(blob: bytes | None) -> dict[int, int]:
    return {} if blob is None else sketch.from_pairs(unpack(blob))


def merged_sketch(blobs: Iterable[bytes | None]) -> dict[int, int]:
    total: dict[int, int] = {}
    for blob in blobs:
        if blob is not None:
            sketch.merge_into(total, sketch_of(blob))
    return total
