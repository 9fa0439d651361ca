"""The native engine: segments digested by the Rust core on threads, merged inside it.

The plan is the Python engine's (govern/digest/python_engine.py): segments cut at record
boundaries, merged strictly in input order, a segment redone when pt's reader ran into
it. Each range is digested with the GIL released and stays a Rust object until the
core merges it (govern/digest/native_total.py); the classes cross into Python only
when a report asks for one (:class:`NativePartial`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from govern import native
from govern.digest.inputs import Input, total_size
from govern.digest.native_total import Job, NativeMerger, NativePartial, run_jobs
from govern.digest.options import DigestOptions
from govern.digest.segments import growing_file_segments, stream_segments
from govern.progress import progress

if TYPE_CHECKING:
    from govern._native import FileMap

#: Segments of a plain file. A segment's classes wait in memory (about 1.3 KB each) until
#: merged: once the digest has thousands of classes (a log of 200,000 distinct statements
#: has 30,000 in 8 MB), the next segments are cut smaller. While it has few once the
#: first segments are merged, they are cut larger: each range and each merge has a fixed
#: cost (on a 5 GB log of 405 classes, 8 MB segments spent 1.5 CPU-seconds merging, 32 MB
#: ones 0.55).
NATIVE_SEGMENT = 8 * 1024 * 1024
NATIVE_SEGMENT_FEW_CLASSES = 32 * 1024 * 1024
NATIVE_SEGMENT_MANY_CLASSES = 1024 * 1024
MANY_CLASSES = 4096


class NativeEngine:
    """Digests with the Rust core (an :class:`~govern.digest.runner.Engine`)."""

    def digest(
        self, inputs: Sequence[Input], options: DigestOptions, workers: int
    ) -> NativePartial:
        maps: dict[str, FileMap] = {}
        merger = NativeMerger(options.engine(None))

        def segment_bytes() -> int:
            return options.segment or native_segment(merger.class_count(), merger.merged_bytes)

        def jobs() -> Iterator[Job]:
            for index, item in enumerate(inputs):
                segments = (
                    growing_file_segments(index, item, options, segment_bytes)
                    if item.seekable
                    else stream_segments(index, item, options)
                )
                for segment in segments:
                    data: FileMap | bytes | bytearray
                    if segment.path is not None:
                        if segment.path not in maps:
                            maps[segment.path] = native.map_file(segment.path)
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
            size = total_size(inputs)
            with progress("digesting", size, force=options.show_progress) as bar:
                run_jobs(jobs(), merger, workers, bar)
        finally:
            for mapped in maps.values():
                mapped.close()
        return merger.finish()

    def digest_bytes(self, data: bytes, options: DigestOptions) -> NativePartial:
        merger = NativeMerger(options.engine(options.host))
        job = (0, 0, options.host, 0, len(data), True, data, len(data))
        run_jobs(iter([job]), merger, 1, None)
        return merger.finish()


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
