"""Stored buckets merged back into one digest: the exact merge of ``govern digest merge``.

Each unit read from the store (an hourly bucket, a day's roll-up of a host or of the
fleet) is a document without its classes (``meta``) plus class documents; they become
aggregates again (:func:`govern.digest.merge.partial_of`) and merge as a digest's
segments do: counts and sums added, sketches added bucket by bucket, so merged
percentiles are those of one digest of all the logs (within the sketch's 0.39%).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from govern.digest.aggregate import Partial
from govern.digest.merge import merge_sourced, partial_of
from govern.digest.result import Digest, Source
from govern.history.rows import decode_class

#: Classes a roll-up keeps apart before folding the rest into ``other`` (a report then
#: keeps its own --max-classes).
ROLL_UP_CLASSES = 1_000_000


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """The cyclic garbage collector paused: reading back thousands of class states makes
    millions of small lists, and each collection walks the growing merge again (measured: a
    week's fleet report took 4.3 CPU-s with it, 2.0 without). Nothing made here is cyclic."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Merger:
    """Units added one by one into one aggregate; inputs listed once each by (name, host)."""

    def __init__(self, max_classes: int = ROLL_UP_CLASSES) -> None:
        self.max_classes = max_classes
        self.partial = Partial(ts_seen=True, db_seen=True)
        self.sources: list[Source] = []

    def add(self, meta: Mapping[str, Any], classes: Iterable[bytes | Mapping[str, Any]]) -> None:
        """One unit: its meta and its classes, as stored state blobs (either form) or
        class documents."""
        document = dict(meta)
        names = {item["name"]: index for index, item in enumerate(meta.get("inputs") or [])}
        document["classes"] = [
            decode_class(item, names) if isinstance(item, bytes) else item for item in classes
        ]
        document["inputs"] = meta.get("inputs") or []
        document["unreported"] = meta.get("unreported") or []
        document["malformed"] = meta.get("malformed") or []
        part, sources = partial_of(document)
        merge_sourced(self.partial, self.sources, part, sources, max_classes=self.max_classes)

    def digest(self, *, order_by: str = "Query_time:sum", max_classes: int | None = None) -> Digest:
        if max_classes is not None and max_classes < self.max_classes:
            from govern.digest.aggregate import cap_classes

            cap_classes(self.partial, max_classes)
        return Digest(
            partial=self.partial,
            sources=self.sources,
            order_by=order_by,
            max_classes=max_classes or self.max_classes,
        )
