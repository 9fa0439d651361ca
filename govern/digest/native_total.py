"""A digest merged inside the native core: ranges on threads, classes kept in Rust.

With the core built, the native engine (govern/digest/native_engine.py) runs its plan
(segments cut at record boundaries, merged strictly in input order, a segment
redone when pt's reader ran into it) with threads instead of worker processes:
each range is digested by the core with the GIL released and stays a Rust object
(``native.Range``) until ``native.Total`` merges it, the twin of
:func:`govern.digest.aggregate.merge` (native/src/total.rs). With
--since/--until/--filter, a range that needs the context before it defers its
first events, and :func:`run_jobs` digests them again once that context is
merged (engine.py's deferred records). Classes cross into Python only when asked
for, one at a time (:class:`NativePartial`), so a digest of 200,000 classes is
never 200,000 Python objects.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar, overload

from govern import native
from govern.digest.aggregate import ClassAgg, Fit, Malformed, Metric, Runs, Sample
from govern.digest.classes import DocumentFrame
from govern.digest.columns import ClassColumns
from govern.digest.decode import malformed_reason, text
from govern.digest.options import EngineOptions, host_salt
from govern.digest.ordering import ClassKey
from govern.progress import Progress

if TYPE_CHECKING:
    from govern._native import ClassFigures, FileMap, Range, Total


#: Class documents the core writes per call (native/src/document.rs).
JSON_BATCH = 256
#: Class documents the core writes per call as runs: enough for it to split them over
#: the cores (1,024 a thread at least), one output step (document.py ``WRITE_STEP``).
RUNS_BATCH = 4096


class NativePartial:
    """The merged digest held by the core, as a :class:`ClassSource`: the attributes
    of :class:`Partial` that reports read, and classes built on request, one at a time
    (:meth:`class_at`), never all of them."""

    def __init__(self, total: Total) -> None:
        self._total = total
        self.events: int = total.events
        self.filtered: int = total.filtered
        self.no_statement: int = total.no_statement
        self.malformed: int = total.malformed
        self.banners: int = total.banners
        self.malformed_kept = [
            Malformed(file, line, malformed_reason(raw))
            for file, line, raw in total.malformed_kept()
        ]
        self.minutes: dict[str, list[int]] = {
            minute: [n, micro] for minute, n, micro in total.minutes()
        }
        self._ranked: dict[tuple[str, str], tuple[Keys, Keys]] = {}
        self._totals: ClassFigures | None = None
        other = total.other()
        self.other: ClassAgg | None = None if other is None else _class(other)

    def class_count(self) -> int:
        return len(self._total)

    def class_keys(self, attribute: str) -> Keys:
        """Every class's key, each built when read: ``any(...)`` over them stops at
        the first match, and 200,000 classes are never 200,000 key objects at once."""
        return Keys(self, array("I", range(len(self._total))), attribute)

    def ranked_keys(self, attribute: str, function: str) -> tuple[Keys, Keys]:
        """``Digest.keys`` done by the core: the ranking is computed in Rust (once per
        order) and the keys are built when read, so 200,000 classes cost two arrays,
        not 200,000 objects."""
        found = self._ranked.get((attribute, function))
        if found is None:
            reported, unreported = self._total.ranked(attribute.encode(), function)
            found = self._ranked[attribute, function] = (
                Keys(self, reported, attribute),
                Keys(self, unreported, attribute),
            )
        return found

    def key_at(self, index: int, attribute: str) -> ClassKey:
        return ClassKey(index, *self._total.key_at(index, attribute.encode()))

    def fingerprint_of(self, class_id: str) -> bytes | None:
        """The fingerprint of the class whose query ID is ``class_id``, if kept."""
        found: bytes | None = self._total.fingerprint_of(class_id)
        return found

    def class_at(self, index: int) -> ClassAgg:
        return _class(self._total.class_at(index))

    def query_ids(self, keys: Sequence[ClassKey]) -> bytes:
        """The query IDs of ``keys``' classes, 16 bytes each, from the core's cache."""
        indexes = keys.indexes() if isinstance(keys, Keys) else array("I", (k.index for k in keys))
        found: bytes = self._total.query_ids(indexes.tobytes())
        return found

    def class_json(self, keys: Sequence[ClassKey], frame: DocumentFrame) -> Iterator[str | None]:
        """The class documents written by the core (native/src/document.rs), a few
        hundred per call; None for a class it leaves to document.py (text that is not
        UTF-8, numbers a float cannot carry exactly)."""
        indexes = keys.indexes() if isinstance(keys, Keys) else array("I", (k.index for k in keys))
        for start in range(0, len(indexes), JSON_BATCH):
            yield from self._total.class_json(
                indexes[start : start + JSON_BATCH].tobytes(),
                frame.total_time,
                frame.window_seconds,
                list(frame.sources),
            )

    def class_json_runs(
        self, keys: Sequence[ClassKey], frame: DocumentFrame
    ) -> Iterator[bytes | int]:
        """The class documents written by the core, as UTF-8 joined by ``", "``, a few
        hundred in one bytes object; for a class it leaves to document.py, its position
        in ``keys``."""
        indexes = keys.indexes() if isinstance(keys, Keys) else array("I", (k.index for k in keys))
        sources = list(frame.sources)
        for start in range(0, len(indexes), RUNS_BATCH):
            for piece in self._total.class_json_runs(
                indexes[start : start + RUNS_BATCH].tobytes(),
                frame.total_time,
                frame.window_seconds,
                sources,
            ):
                yield piece + start if isinstance(piece, int) else piece

    def totals(self) -> ClassAgg:
        """The core's totals (count, window, metrics, booleans: total.rs), merged once
        and built anew each time (reports ask for the window and the metrics apart)."""
        if self._totals is None:
            self._totals = self._total.totals()
        return _class(self._totals)

    def rule_columns(
        self,
        keys: Sequence[ClassKey],
        words: Sequence[str],
        max_depth: int,
        metrics: Sequence[str],
        verbs: Sequence[str],
    ) -> ClassColumns:
        """The classes of ``keys`` in columns, filled by the core in one call."""
        indexes = keys.indexes() if isinstance(keys, Keys) else array("I", (k.index for k in keys))
        found = self._total.rule_columns(
            indexes.tobytes(),
            [word.encode() for word in words],
            max_depth,
            [name.encode() for name in metrics],
            [verb.encode() for verb in verbs],
        )
        samples, sample_ends, prints, print_ends, counts, flags, maxes = found
        return ClassColumns(
            samples,
            array("Q", sample_ends),
            prints,
            array("Q", print_ends),
            array("Q", counts),
            flags,
            {name: array("d", values) for name, values in zip(metrics, maxes, strict=True)},
        )


class Keys(Sequence[ClassKey]):
    """Class keys of a :class:`NativePartial` in a given order, each built when read."""

    __slots__ = ("_attribute", "_indexes", "_source")

    def __init__(self, source: NativePartial, packed: bytes | array[int], attribute: str) -> None:
        self._source = source
        self._indexes = packed if isinstance(packed, array) else array("I", packed)
        self._attribute = attribute

    def __len__(self) -> int:
        return len(self._indexes)

    @overload
    def __getitem__(self, index: int) -> ClassKey: ...

    @overload
    def __getitem__(self, index: slice) -> Keys: ...

    def __getitem__(self, index: int | slice) -> ClassKey | Keys:
        if isinstance(index, slice):
            return Keys(self._source, self._indexes[index], self._attribute)
        return self._source.key_at(self._indexes[index], self._attribute)

    def indexes(self) -> array[int]:
        """The classes' indexes in the core, in this order."""
        return self._indexes

    def __iter__(self) -> Iterator[ClassKey]:
        key_at, attribute = self._source.key_at, self._attribute
        for index in self._indexes:
            yield key_at(index, attribute)


class NativeMerger:
    """The runner's merger for the core: ranges into ``native.Total``, in input order."""

    def __init__(self, options: EngineOptions) -> None:
        self.total = native.new_total(options.max_classes)
        self.max_classes = options.max_classes
        self.filtering = filter_arguments(options)
        self.lines: dict[int, int] = {}  # file -> lines before the next segment
        self.reached: dict[int, int] = {}  # file -> where reading stopped (absolute)
        self.merged_bytes = 0  # input bytes whose ranges are merged

    def add(self, file: int, base: int, host: str | None, result: Any, size: int) -> None:
        self.merged_bytes += size
        lines = self.lines.get(file, 0)
        self.lines[file] = lines + result.newlines
        self.reached[file] = base + result.end
        self.total.add(result, file, lines, host)

    def add_head(self, file: int, host: str | None, head: Any) -> None:
        """The deferred head of the next range, digested with the context: merged just
        before the range, its lines counted from the same start, no line or byte of the
        input counted twice."""
        self.total.add(head, file, self.lines.get(file, 0), host)

    def context(self) -> tuple[bytes | None, bytes | None]:
        """The last ts (text) and db the merged ranges leave to the next one."""
        found: tuple[bytes | None, bytes | None] = self.total.context()
        return found

    def class_count(self) -> int:
        return len(self.total)

    def finish(self) -> NativePartial:
        self.total.finish()
        return NativePartial(self.total)


def filter_arguments(options: EngineOptions) -> dict[str, Any]:
    """``--since``, ``--until`` and ``--filter`` as ``native.range_handle`` takes them: the
    core compares times itself and asks ``filters.py`` about each distinct db, user and
    host and each fingerprint, so globs and regular expressions mean what they mean in
    Python."""
    filters = options.filters
    arguments: dict[str, Any] = {
        "since": None if options.since is None else options.since.encode(),
        "until": None if options.until is None else options.until.encode(),
    }
    if filters is not None:
        arguments["needs_db"] = filters.needs_db
        if filters.on_events:

            def keep_event(db: bytes | None, user: bytes | None, host: bytes | None) -> bool:
                return filters.keep_event(
                    *(None if v is None else text(v) for v in (db, user, host))
                )

            arguments["keep_event"] = keep_event
        if filters.on_classes:
            arguments["keep_class"] = filters.keep_class
    return arguments


def run_range(
    data: FileMap | bytes | bytearray,
    low: int,
    high: int,
    merger: NativeMerger,
    host: str | None,
    *,
    first: bool = False,
    context: tuple[bytes | None, bytes | None] | None = None,
    max_events: int | None = None,
) -> Range:
    """One range through the core, left in Rust. Only the digest's very first range
    knows what came before it (nothing), and a deferred head is given its ``context``;
    the merge settles the others."""
    ts, db = context or (None, None)
    return native.range_handle(
        data,
        low,
        high,
        len(data),
        merger.max_classes,
        ts,
        db,
        first or context is not None,
        host_salt(host),
        max_events=max_events,
        **merger.filtering,
    )


#: One segment's work: (file, base, host, low, high, first, data, size).
Job = tuple[int, int, "str | None", int, int, bool, "FileMap | bytes | bytearray", int]


def run_jobs(
    jobs: Iterator[Job],
    merger: NativeMerger,
    threads: int,
    bar: Progress | None,
) -> None:
    """Digest ``jobs`` on ``threads`` threads and merge them in order; a job the
    previous one's reader ran into is digested again from where that reader stopped."""

    def start(job: Job) -> Callable[[], Any]:
        _file, _base, host, low, high, first, data, _size = job
        return lambda: run_range(data, low, high, merger, host, first=first)

    def accept(job: Job, result: Any) -> None:
        file, base, host, low, high, _first, data, size = job
        reached = merger.reached.get(file)
        if reached is not None and not (base == 0 and low == 0):
            skip = max(0, reached - (base + low))
            if skip:
                low, high = low + skip, max(high, low + skip)
                result = run_range(data, low, high, merger, host)
        if result.deferred_events:
            head = run_range(
                data, low, high, merger, host, context=merger.context(),
                max_events=result.deferred_events,
            )  # fmt: skip
            merger.add_head(file, host, head)
        merger.add(file, base, host, result, size)
        if bar is not None:
            bar.advance(size)

    if threads <= 1:
        for job in jobs:
            accept(job, start(job)())
        return
    window = 2 * threads
    in_flight: deque[tuple[Job, Future[Any]]] = deque()
    with ThreadPoolExecutor(threads, thread_name_prefix="govern-digest") as pool:
        for job in jobs:
            in_flight.append((job, pool.submit(start(job))))
            while len(in_flight) >= window:
                done, pending = in_flight.popleft()
                accept(done, pending.result())
        while in_flight:
            done, pending = in_flight.popleft()
            accept(done, pending.result())


T = TypeVar("T")

#: Field names of the aggregate.py dataclasses, read once.
_FIELDS: dict[type, tuple[str, ...]] = {}


def _build(model: type[T], figures: object, **nested: object) -> T:
    """A dataclass of aggregate.py from the core's figures of the same field names
    (native/src/python/figures.rs); ``nested`` gives the fields built from figures of
    their own."""
    names = _FIELDS.get(model)
    if names is None:
        names = _FIELDS[model] = tuple(f.name for f in fields(model))  # type: ignore[arg-type]
    values = {name: getattr(figures, name) for name in names if name not in nested}
    return model(**values, **nested)


def _class(figures: ClassFigures) -> ClassAgg:
    """A merged class from the core's figures: plain figures by name, nested ones
    (metrics, sample, runs, fit) as their own dataclasses."""
    sample = figures.sample
    return _build(
        ClassAgg,
        figures,
        metrics={name: _build(Metric, m) for name, m in figures.metrics.items()},
        # The core never has a plan: govern collect adds its EXPLAIN after the digest.
        sample=None if sample is None else _build(Sample, sample, plan=None),
        runs=_build(Runs, figures.runs),
        single_runs=_build(Runs, figures.single_runs),
        fit=_build(Fit, figures.fit),
    )
