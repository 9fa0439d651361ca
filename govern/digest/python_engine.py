"""The Python reference engine: segments digested by worker processes, merged in order.

Workers run :func:`govern.digest.engine.digest_range` on one segment each
(govern/digest/segments.py); the parent merges the results strictly in input order,
so the result is the serial one:

* line numbers: a segment counts lines from its own start; the parent adds the
  lines of the segments before it;
* pt's fallback may read past a segment's end (a record with no statement line
  right before a cut): the parent then digests the next segment again from
  where the previous one stopped;
* with --since/--until or a db filter, a segment's first events may need the
  ts or db of the one before: the worker returns them undigested and the
  parent digests them once it knows.

At most ``2 × workers`` segments are in flight, so memory stays bounded on any input.
The runner uses it when the native core is not built (govern/digest/runner.py).
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Iterator, Sequence
from multiprocessing.pool import AsyncResult, Pool

from govern.digest.aggregate import Partial, close_runs, merge
from govern.digest.engine import Context, RangeResult, digest_range, digest_records
from govern.digest.inputs import Input, open_mmap, total_size
from govern.digest.options import DigestOptions
from govern.digest.segments import Segment, file_segments, stream_segments
from govern.progress import Progress, progress


class PythonEngine:
    """Digests with :mod:`govern.digest.engine` (an :class:`~govern.digest.runner.Engine`)."""

    def digest(self, inputs: Sequence[Input], options: DigestOptions, workers: int) -> Partial:
        merger = _Merger(options.max_classes)
        segments = _segments(inputs, options)
        size = total_size(inputs)
        if workers > 1:
            # Fork the workers before the progress bar starts its drawing thread.
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                try:
                    with progress("digesting", size, force=options.show_progress) as bar:
                        _run_parallel(segments, merger, pool, 2 * workers, bar)
                finally:
                    pool.terminate()
        else:
            with progress("digesting", size, force=options.show_progress) as bar:
                for segment in segments:
                    _accept(segment, run_segment(segment, merger.context()), merger, bar)
        close_runs(merger.total)
        return merger.total

    def digest_bytes(self, data: bytes, options: DigestOptions) -> Partial:
        merger = _Merger(options.max_classes)
        engine = options.engine(options.host)
        segment = Segment(0, None, data, 0, len(data), True, True, 0, len(data), engine)
        _accept(segment, run_segment(segment, merger.context()), merger, None)
        close_runs(merger.total)
        return merger.total


def _segments(inputs: Sequence[Input], options: DigestOptions) -> Iterator[Segment]:
    for index, item in enumerate(inputs):
        if item.seekable:
            yield from file_segments(index, item, options)
        else:
            for segment in stream_segments(index, item, options):
                # The reader here slices and hashes its text: bytes, not a bytearray.
                segment.data = bytes(segment.data or b"")
                yield segment


def run_segment(segment: Segment, context: Context | None = None) -> RangeResult:
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
        if segment.path is not None and not isinstance(data, bytes | bytearray):
            data.close()


class _Merger:
    """Merges segment results in input order into one Partial."""

    def __init__(self, max_classes: int) -> None:
        self.total = Partial(ts_seen=True, db_seen=True)
        self.max_classes = max_classes
        self.lines: dict[int, int] = {}  # file -> lines before the next segment
        self.reached: dict[int, int] = {}  # file -> where reading stopped (absolute)

    def context(self) -> Context:
        return Context(ts=self.total.last_ts, db=self.total.last_db, known=True)

    def add(self, segment: Segment, result: RangeResult) -> None:
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

    def overrun(self, segment: Segment) -> int:
        """How far the previous segment of this file read into this one (0: not at all)."""
        reached = self.reached.get(segment.file)
        if reached is None or segment.at_start:
            return 0
        return max(0, reached - (segment.base + segment.low))


def _accept(segment: Segment, result: RangeResult, merger: _Merger, bar: Progress | None) -> None:
    """Merge one result; if the segment before read into it, digest it again from there."""
    skip = merger.overrun(segment)
    if skip:
        # The lines up to where reading stopped are already counted (the previous
        # segment's newlines run to its end).
        redo = Segment(
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
        result = run_segment(redo, merger.context())
        segment = redo
    merger.add(segment, result)
    if bar is not None:
        bar.advance(segment.size)


def _run_parallel(
    segments: Iterator[Segment], merger: _Merger, pool: Pool, window: int, bar: Progress
) -> None:
    in_flight: deque[tuple[Segment, AsyncResult[RangeResult]]] = deque()
    for segment in segments:
        in_flight.append((segment, pool.apply_async(run_segment, (segment,))))
        while len(in_flight) >= window:
            _collect(in_flight, merger, bar)
    while in_flight:
        _collect(in_flight, merger, bar)


def _collect(
    in_flight: deque[tuple[Segment, AsyncResult[RangeResult]]], merger: _Merger, bar: Progress
) -> None:
    segment, pending = in_flight.popleft()
    _accept(segment, pending.get(), merger, bar)
