"""A bucket document as store rows, and rows back: compact blobs beside plain figures.

A class row keeps the figures a query filters or sums on as columns (count, total and
largest Query_time in microseconds) and everything a merge needs in one zlib-compressed
JSON blob: exactly what :func:`govern.digest.merge.partial_of` reads of a class, no
figures for people (percentiles are recomputed from the merged sketches). The Query_time
sketch is also kept apart, so a series of one class reads a few hundred bytes a bucket.
What is not a class (inputs, totals, timeline, ``other``, ``unreported``, malformed
events) is the bucket's ``meta`` blob.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from govern import sketch
from govern.digest.document import build_document
from govern.digest.result import Digest

#: What partial_of reads of a class document (govern/digest/merge.py, ``_class``).
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
    return None if blob is None else json.loads(zlib.decompress(blob))


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
                pack({key: item[key] for key in CLASS_KEYS if key in item}),
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


def digest_rows(digest: Digest) -> BucketRows:
    """The rows of a merged digest (a roll-up): only what the rows keep of each class is
    built (its state), not the figures for people that a class document adds (8% of a
    host-day's roll-up went to them)."""
    document = build_document(digest)
    document["classes"] = document["classes"].views()
    document["unreported"] = list(document["unreported"])
    return bucket_rows(document)


def sketch_of(blob: bytes | None) -> dict[int, int]:
    return {} if blob is None else sketch.from_pairs(unpack(blob))


def merged_sketch(blobs: Iterable[bytes | None]) -> dict[int, int]:
    total: dict[int, int] = {}
    for blob in blobs:
        if blob is not None:
            sketch.merge_into(total, sketch_of(blob))
    return total
