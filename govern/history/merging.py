"""Stored buckets merged back into one digest: the exact merge of ``govern digest merge``.

Each unit read from the store (an hourly bucket, a day's roll-up of a host or of the
fleet) is a document without its classes (``meta``) plus class documents; they become
aggregates again (:func:`govern.digest.merge.partial_of`) and merge as a digest's
segments do: counts and sums added, sketches added bucket by bucket, so merged
percentiles are those of one digest of all the logs (within the sketch's 0.39%).

With the native core, the classes are merged there (native/src/stored.rs, the same rules
as ``ClassAgg.merge``, row by row in the same order) from their ``marshal`` payloads, and
only each merged class becomes a Python aggregate: a report reads 70 rows a class for a
week of ten hosts, so the per-row cost is what counts. Without the core (or with
``GOVERN_NATIVE=0``) each row becomes an aggregate and merges in Python.
"""

from __future__ import annotations

import contextlib
import gc
import marshal
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from govern import native
from govern.digest.aggregate import ClassAgg, Partial, cap_classes
from govern.digest.merge import merge_sourced, partial_of
from govern.digest.result import Digest, Source
from govern.history.rows import agg_of, decode_class, encode_agg, load_payload, payload

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
        self._native = native.stored_merge()
        #: Per unit added: its input names (indexes) and where each input went in sources.
        self._units: list[tuple[dict[str, int], list[int]]] = []

    def add(self, meta: Mapping[str, Any], classes: Iterable[bytes | Mapping[str, Any]]) -> None:
        """One unit: its meta and its classes, as stored state blobs (either form) or
        class documents."""
        document = dict(meta)
        names = {item["name"]: index for index, item in enumerate(meta.get("inputs") or [])}
        document["inputs"] = meta.get("inputs") or []
        document["unreported"] = meta.get("unreported") or []
        document["malformed"] = meta.get("malformed") or []
        if self._native is None:
            document["classes"] = [
                decode_class(item, names) if isinstance(item, bytes) else item for item in classes
            ]
            part, sources = partial_of(document)
            merge_sourced(self.partial, self.sources, part, sources, max_classes=self.max_classes)
            return
        # the classes, and the unreported ones (a count each), go to the core in their order
        payloads = [payload(item) for item in classes]
        payloads.extend(
            _count_payload(item["fingerprint"].encode("utf-8", "surrogateescape"), item["count"])
            for item in document["unreported"]
        )
        document["classes"] = document["unreported"] = []
        part, sources = partial_of(document)
        mapping = merge_sourced(
            self.partial, self.sources, part, sources, max_classes=self.max_classes
        )
        unit = len(self._units)
        self._units.append((names, mapping))
        at = self._native.add(payloads, unit, 0)
        while at < len(payloads):  # a form the core does not read: its class is added here
            self._native.keep(load_payload(payloads[at])[0], payloads[at], unit)
            at = self._native.add(payloads, unit, at + 1)

    def _finish(self) -> None:
        """The core's merged classes as aggregates (once): rows it left (a figure beyond
        its integers) are added here in their order."""
        if self._native is None:
            return
        merged, self._native = self._native.finish(), None
        classes = self.partial.classes
        for state, sample_unit, left in merged:
            agg = None if state is None else self._agg(marshal.loads(state), sample_unit)
            for data, unit in left:
                more = self._agg(load_payload(data), unit)
                if agg is None:
                    agg = more
                else:
                    agg.merge(more)
            assert agg is not None
            classes[agg.fingerprint] = agg
        self._units = []
        cap_classes(self.partial, self.max_classes)

    def _agg(self, value: Sequence[Any], unit: int) -> ClassAgg:
        names, mapping = self._units[unit]
        agg = agg_of(value, names)
        if agg.sample is not None and agg.sample.file < len(mapping):
            agg.sample.file = mapping[agg.sample.file]
        return agg

    def digest(self, *, order_by: str = "Query_time:sum", max_classes: int | None = None) -> Digest:
        self._finish()
        if max_classes is not None and max_classes < self.max_classes:
            cap_classes(self.partial, max_classes)
        return Digest(
            partial=self.partial,
            sources=self.sources,
            order_by=order_by,
            max_classes=max_classes or self.max_classes,
        )


def _count_payload(fingerprint: bytes, count: int) -> bytes:
    """An unreported class (a count only) as a state payload."""
    return payload(encode_agg(ClassAgg(fingerprint, count=count), None))
