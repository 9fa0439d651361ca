"""Running a digest over inputs: segments, worker processes, merging in order.

Each input is cut into segments at record boundaries: a plain file by offsets
(workers map the file and read their own slice), a stream (stdin, compressed
files) by blocks the parent reads and hands over. Workers run the engine
(:func:`govern.digest.engine.digest_range`) on one segment each; the parent
merges the results strictly in input order, so the result is the serial one:

* line numbers: a segment counts lines from its own start; the parent adds the
  lines of the segments before it;
* pt's fallback may read past a segment's end (a record with no statement line
  right before a cut): the parent then digests the next segment again from
  where the previous one stopped;
* with --since/--until or a db filter, a segment's first events may need the
  ts or db of the one before: the worker returns them undigested and the
  parent digests them once it knows.

At most ``2 × jobs`` segments are in flight, so memory stays bounded on any input.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.pool import AsyncResult, Pool

from govern import native
from govern.digest.aggregate import Partial, close_runs, merge
from govern.digest.classes import ClassSource
from govern.digest.engine import (
    Context,
    EngineOptions,
    RangeResult,
    digest_range,
    digest_records,
)
from govern.digest.inputs import (
    FileView,
    Input,
    check_text,
    open_mmap,
    resolve,
    split_points,
    stream_blocks,
)
from govern.digest.native_total import Job, NativeMerger, NativePartial, run_jobs
from govern.digest.options import DigestOptions
from govern.digest.ordering import parse_order_by
from govern.digest.result import Digest, Source
from govern.progress import Progress, progress
from govern.slowlog import SEPARATOR

SEGMENT = 16 * 1024 * 1024
#: Segments of a plain file when the core merges them (govern/digest/native_total.py). A
#: segment's classes wait in memory (about 1.3 KB each) until merged: once the digest has
#: thousands of classes (a log of 200,000 distinct statements has 30,000 in 8 MB), the
#: next segments are cut smaller. While it has few once the first segments are merged,
#: they are cut larger: each range and each merge has a fixed cost (on a 5 GB log of 405
#: classes, 8 MB segments spent 1.5 CPU-seconds merging, 32 MB ones 0.55).
NATIVE_SEGMENT = 8 * 1024 * 1024
NATIVE_SEGMENT_FEW_CLASSES = 32 * 1024 * 1024
NATIVE_SEGMENT_MANY_CLASSES = 1024 * 1024
MANY_CLASSES = 4096
#: Below this, a plain file is digested in the parent: starting workers costs more.
PARALLEL_MINIMUM = 8 * 1024 * 1024


@dataclass
class _Segment:
    """One unit of work: records starting in [low, high) of a file or a block of bytes."""

    file: int
    path: str | None  # a plain file, mapped by the worker
    data: bytes | None  # a stream's block (with a few records of slack after ``high``)
    low: int
    high: int
    at_start: bool  # the segment starts its input
    first: bool  # the segment starts the whole digest (nothing to inherit from)
    base: int  # absolute offset of ``data[0]`` (streams) in the input
    size: int  # bytes this segment stands for, for the progress bar
    options: EngineOptions


def _run_segment(segment: _Segment, context: Context | None = None) -> RangeResult:
    """Worker side (also used in the parent): digest one segment.

    Without ``context`` (in a worker), what came before is unknown unless the
    segment starts the digest; the merge settles it.
    """
    if context is None:
        context = Context(known=segment.first)
    data = open_mmap(segment.path) if segment.path is not None else segment.data
    assert data is not None
    try:
        return digest_range(
            data,  # type: ignore[arg-type]
            segment.low,
            segment.high,
            at_start=segment.at_start,
            file=segment.file,
            options=segment.options,
            context=context,
        )
    finally:
        if segment.path is not None and not isinstance(data, bytes):
            data.close()


def segment_size(options: DigestOptions) -> int:
    """Bytes per segment of a plain file for the Python engine."""
    return options.segment or SEGMENT


def _file_segments(
    index: int, item: Input, options: DigestOptions, jobs: int
) -> Iterator[_Segment]:
    assert item.path is not None
    with open(item.path, "rb") as handle:
        view = FileView(handle.fileno())
        check_text(item.name, view.read(0, 65536))
        segment = segment_size(options)
        parts = max(1, len(view) // segment)
        points = split_points(view, parts, min(segment, PARALLEL_MINIMUM))
    size = item.size or 0
    engine = options.engine(item.host)
    for number, low in enumerate(points):
        high = points[number + 1] if number + 1 < len(points) else size
        first = index == 0 and low == 0
        yield _Segment(index, item.path, None, low, high, low == 0, first, 0, high - low, engine)


def _stream_segments(index: int, item: Input, options: DigestOptions) -> Iterator[_Segment]:
    """Blocks of a stream, cut after a separator, each with two more records of slack.

    pt's fallback reads at most two records past the one that needs it, so a
    segment carrying two records beyond ``high`` never runs out of text.
    """
    engine = options.engine(item.host)
    each = options.segment or SEGMENT
    buffer = b""
    base = 0
    first = True
    consumed = 0
    blocks = stream_blocks(item, min(each, 16 * 1024 * 1024))
    ended = False
    wanted = each + 1024 * 1024
    while not ended or buffer:
        while not ended and len(buffer) < wanted:
            block = next(blocks, None)
            if block is None:
                ended = True
                break
            if first and not buffer:
                check_text(item.name, block[0])
            buffer += block[0]
            consumed += block[1]
        if ended:
            if buffer or first:
                yield _Segment(
                    index,
                    None,
                    buffer,
                    0,
                    len(buffer),
                    first,
                    first and index == 0,
                    base,
                    consumed,
                    engine,
                )
            return
        cut = buffer.find(SEPARATOR, each)
        slack = _slack_end(buffer, cut, 2)
        if cut < 0 or slack < 0:
            wanted = len(buffer) + each  # long records: read on
            continue
        wanted = each + 1024 * 1024
        high = cut + len(SEPARATOR)
        yield _Segment(
            index,
            None,
            buffer[:slack],
            0,
            high,
            first,
            first and index == 0,
            base,
            consumed,
            engine,
        )
        first = False
        consumed = 0
        buffer = buffer[high:]
        base += high


def _slack_end(buffer: bytes, cut: int, extra: int) -> int:
    """The end of the ``extra``-th separator after the one at ``cut`` (-1: not in buffer)."""
    position = cut
    for _ in range(extra):
        if position < 0:
            return -1
        position = buffer.find(SEPARATOR, position + len(SEPARATOR))
    return -1 if position < 0 else position + len(SEPARATOR)


class _Merger:
    """Merges segment results in input order into one Partial."""

    def __init__(self, max_classes: int) -> None:
        self.total = Partial(ts_seen=True, db_seen=True)
        self.max_classes = max_classes
        self.lines: dict[int, int] = {}  # file -> lines before the next segment
        self.reached: dict[int, int] = {}  # file -> where reading stopped (absolute)

    def context(self) -> Context:
        return Context(ts=self.total.last_ts, db=self.total.last_db, known=True)

    def add(self, segment: _Segment, result: RangeResult) -> None:
        base = self.lines.get(segment.file, 0)
        if result.deferred:
            early = digest_records(
                result.deferred,
                result.deferred_lines,
                file=segment.file,
                options=segment.options,
                context=self.context(),
            )
            early.shift_lines(base, segment.file)
            merge(self.total, early, max_classes=self.max_classes)
        result.partial.shift_lines(base, segment.file)
        merge(self.total, result.partial, max_classes=self.max_classes)
        self.lines[segment.file] = base + result.newlines
        self.reached[segment.file] = segment.base + result.end

    def overrun(self, segment: _Segment) -> int:
        """How far the previous segment of this file read into this one (0: not at all)."""
        reached = self.reached.get(segment.file)
        if reached is None or segment.at_start:
            return 0
        return max(0, reached - (segment.base + segment.low))


def digest_paths(arguments: list[str], options: DigestOptions | None = None) -> Digest:
    """Digest slow logs (paths, globs, ``-``): the library form of ``govern digest``."""
    options = options or DigestOptions()
    parse_order_by(options.order_by)
    inputs = resolve(arguments, options.host)
    jobs = options.jobs or os.cpu_count() or 1
    plain = sum(item.size or 0 for item in inputs if item.seekable)
    parallel = jobs > 1 and (plain >= PARALLEL_MINIMUM or any(not i.seekable for i in inputs))
    merger = _Merger(options.max_classes)
    total_size = (
        sum(item.size or 0 for item in inputs) if all(i.size is not None for i in inputs) else None
    )
    sources = [
        Source(
            item.name,
            item.host,
            item.size or 0,
            item.compression,
            item.problems,
            stream=not item.regular,
        )
        for item in inputs
    ]
    if native.available():
        partial = _digest_native(inputs, options, jobs if parallel else 1, total_size)
        return _digest(partial, sources, options)
    segments = _all_segments(inputs, options, jobs if parallel else 1)
    if parallel:
        # Fork the workers before the progress bar starts its drawing thread.
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            try:
                with progress("digesting", total_size, force=options.show_progress) as bar:
                    _run_parallel(segments, merger, pool, 2 * jobs, bar)
            finally:
                pool.terminate()
    else:
        with progress("digesting", total_size, force=options.show_progress) as bar:
            for segment in segments:
                _accept(segment, _run_segment(segment, merger.context()), merger, bar)
    close_runs(merger.total)
    return _digest(merger.total, sources, options)


def _digest(partial: ClassSource, sources: list[Source], options: DigestOptions) -> Digest:
    return Digest(
        partial=partial,
        sources=sources,
        order_by=options.order_by,
        max_classes=options.max_classes,
        since=options.since,
        until=options.until,
        filters=list(options.filter_texts),
    )


def native_segment(classes: int, merged_bytes: int) -> int:
    """Bytes of the core's next segment, given the classes of the ranges merged so far
    and the input bytes they cover: small until the merged part tells how many classes
    the log has (every segment in flight holds its own), then large for a log of few
    classes and small for a log of many."""
    if classes > MANY_CLASSES:
        return NATIVE_SEGMENT_MANY_CLASSES
    if merged_bytes >= NATIVE_SEGMENT_FEW_CLASSES:
        return NATIVE_SEGMENT_FEW_CLASSES
    return NATIVE_SEGMENT


def _digest_native(
    inputs: list[Input], options: DigestOptions, threads: int, total_size: int | None
) -> NativePartial:
    """The core's path: segments on threads, merged in order inside the core."""
    maps: dict[str, mmap.mmap | bytes] = {}

    merger = NativeMerger(options.engine(None))

    def segment_bytes() -> int:
        return options.segment or native_segment(merger.class_count(), merger.merged_bytes)

    def jobs() -> Iterator[Job]:
        for segment in _native_segments(inputs, options, segment_bytes):
            if segment.path is not None:
                if segment.path not in maps:
                    maps[segment.path] = open_mmap(segment.path)
                data = maps[segment.path]
            else:
                assert segment.data is not None
                data = segment.data
            yield (
                segment.file,
                segment.base,
                segment.options.server,
                segment.low,
                segment.high,
                segment.first,
                data,
                segment.size,
            )

    try:
        with progress("digesting", total_size, force=options.show_progress) as bar:
            run_jobs(jobs(), merger, threads, bar)
    finally:
        for data in maps.values():
            if isinstance(data, mmap.mmap):
                data.close()
    return merger.finish()


def digest_bytes(
    data: bytes, options: DigestOptions | None = None, name: str = "<bytes>"
) -> Digest:
    """Digest a slow log held in memory (serially)."""
    options = options or DigestOptions()
    parse_order_by(options.order_by)
    check_text(name, data[:65536])
    engine = options.engine(options.host)
    sources = [Source(name, options.host, len(data))]
    if native.available():
        native_merger = NativeMerger(engine)
        job = (0, 0, options.host, 0, len(data), True, data, len(data))
        run_jobs(iter([job]), native_merger, 1, None)
        return _digest(native_merger.finish(), sources, options)
    merger = _Merger(options.max_classes)
    segment = _Segment(0, None, data, 0, len(data), True, True, 0, len(data), engine)
    _accept(segment, _run_segment(segment, merger.context()), merger, None)
    close_runs(merger.total)
    return _digest(merger.total, sources, options)


def _native_segments(
    inputs: list[Input], options: DigestOptions, size: Callable[[], int]
) -> Iterator[_Segment]:
    """The core's segments: a plain file cut as it is read, ``size()`` bytes at a time."""
    for index, item in enumerate(inputs):
        if not item.seekable:
            yield from _stream_segments(index, item, options)
            continue
        assert item.path is not None
        engine = options.engine(item.host)
        with open(item.path, "rb") as handle:
            view = FileView(handle.fileno())
            check_text(item.name, view.read(0, 65536))
            end = len(view)
            low = 0
            while True:
                cut = view.find(SEPARATOR, low + size()) if low + size() < end else -1
                high = cut + len(SEPARATOR) if 0 <= cut < end - len(SEPARATOR) else end
                first = index == 0 and low == 0
                yield _Segment(
                    index, item.path, None, low, high, low == 0, first, 0, high - low, engine
                )
                if high >= end:
                    break
                low = high


def _all_segments(inputs: list[Input], options: DigestOptions, jobs: int) -> Iterator[_Segment]:
    for index, item in enumerate(inputs):
        if item.seekable:
            yield from _file_segments(index, item, options, jobs)
        else:
            yield from _stream_segments(index, item, options)


def _accept(segment: _Segment, result: RangeResult, merger: _Merger, bar: Progress | None) -> None:
    """Merge one result; if the segment before read into it, digest it again from there."""
    skip = merger.overrun(segment)
    if skip:
        # The lines up to where reading stopped are already counted (the previous
        # segment's newlines run to its end).
        redo = _Segment(
            segment.file,
            segment.path,
            segment.data,
            segment.low + skip,
            max(segment.high, segment.low + skip),
            False,
            False,
            segment.base,
            segment.size,
            segment.options,
        )
        result = _run_segment(redo, merger.context())
        segment = redo
    merger.add(segment, result)
    if bar is not None:
        bar.advance(segment.size)


def _run_parallel(
    segments: Iterator[_Segment], merger: _Merger, pool: Pool, window: int, bar: Progress
) -> None:
    in_flight: deque[tuple[_Segment, AsyncResult[RangeResult]]] = deque()
    for segment in segments:
        in_flight.append((segment, pool.apply_async(_run_segment, (segment,))))
        while len(in_flight) >= window:
            _collect(in_flight, merger, bar)
    while in_flight:
        _collect(in_flight, merger, bar)


def _collect(
    in_flight: deque[tuple[_Segment, AsyncResult[RangeResult]]], merger: _Merger, bar: Progress
) -> None:
    segment, pending = in_flight.popleft()
    _accept(segment, pending.get(), merger, bar)
