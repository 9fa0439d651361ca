"""Inputs cut into segments at record boundaries: the units of work of both engines.

A plain file is cut by offsets (a worker maps the file and reads its own slice); a
stream (stdin, a FIFO, a compressed file) by blocks read here and handed over, each
with two records of slack after its cut: pt's fallback reads at most two records past
the one that needs it, so a segment never runs out of text. Segments are digested
independently and merged strictly in input order (govern/digest/python_engine.py,
native_engine.py), so the result is the serial one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from govern.digest.inputs import FileView, Input, check_text, split_points, stream_blocks
from govern.digest.options import DigestOptions, EngineOptions
from govern.slowlog import SEPARATOR

#: Bytes per segment (the Python engine's files; every stream).
SEGMENT = 16 * 1024 * 1024
#: Below this, a plain file is digested in one process: starting workers costs more.
PARALLEL_MINIMUM = 8 * 1024 * 1024


@dataclass
class Segment:
    """One unit of work: records starting in [low, high) of a file or a block of bytes."""

    file: int
    path: str | None  # a plain file, mapped by the worker
    data: bytes | bytearray | None  # a stream's block (slack of a few records after ``high``)
    low: int
    high: int
    at_start: bool  # the segment starts its input
    first: bool  # the segment starts the whole digest (nothing to inherit from)
    base: int  # absolute offset of ``data[0]`` (streams) in the input
    size: int  # bytes this segment stands for, for the progress bar
    options: EngineOptions


def segment_size(options: DigestOptions) -> int:
    """Bytes per segment of a plain file for the Python engine."""
    return options.segment or SEGMENT


def file_segments(index: int, item: Input, options: DigestOptions) -> Iterator[Segment]:
    """A plain file cut in segments of :func:`segment_size` bytes, found before any is read."""
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
        yield Segment(index, item.path, None, low, high, low == 0, first, 0, high - low, engine)


def growing_file_segments(
    index: int, item: Input, options: DigestOptions, size: Callable[[], int]
) -> Iterator[Segment]:
    """A plain file cut as it is read, ``size()`` bytes at a time (asked at each cut)."""
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
            yield Segment(index, item.path, None, low, high, low == 0, first, 0, high - low, engine)
            if high >= end:
                break
            low = high


def stream_segments(index: int, item: Input, options: DigestOptions) -> Iterator[Segment]:
    """Blocks of a stream, cut after a separator, each with two more records of slack.

    Blocks are gathered in a ``bytearray`` that becomes the segment's data whole (what
    it holds past the slack is never read): only the part after the cut is copied, into
    the next segment's buffer, so a 100 MB statement read from a pipe is held once, as
    from a file."""
    engine = options.engine(item.host)
    each = options.segment or SEGMENT
    buffer = bytearray()
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
                yield Segment(
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
        yield Segment(
            index,
            None,
            buffer,
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
        buffer = buffer[high:]  # a new buffer: the segment's stays as it is
        base += high


def _slack_end(buffer: bytes | bytearray, cut: int, extra: int) -> int:
    """The end of the ``extra``-th separator after the one at ``cut`` (-1: not in buffer)."""
    position = cut
    for _ in range(extra):
        if position < 0:
            return -1
        position = buffer.find(SEPARATOR, position + len(SEPARATOR))
    return -1 if position < 0 else position + len(SEPARATOR)
