"""Opening what ``govern digest`` is given: files, globs, ``-`` (stdin), compressed files.

A plain file is read through mmap, so workers can each digest a slice of it
(:func:`split_points` cuts it exactly at record boundaries). Compressed files
(gzip, bzip2, xz, recognised by their magic bytes, not their names), stdin and
anything else that is not a regular file (a FIFO, ``<(zcat x.gz)``) are streams,
opened once and read in blocks by :func:`stream_blocks`.

Every problem a user can cause (a missing file, a directory, a binary file, a
corrupt archive) becomes a one-line :class:`~govern.errors.UsageError` naming
the file.
"""

from __future__ import annotations

import bz2
import glob
import lzma
import mmap
import os
import stat
import sys
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from govern.errors import UsageError
from govern.slowlog import SEPARATOR

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)
_SNIFF = 64 * 1024
BLOCK = 16 * 1024 * 1024


@dataclass
class Input:
    """One input: a path (or ``-``), how it is compressed, its size on disk."""

    name: str
    path: str | None  # None: stdin
    compression: str | None  # None, "gzip", "bzip2", "xz" (of a stream: known once read)
    size: int | None  # bytes on disk (None when not a regular file)
    host: str | None = None  # --host label
    problems: list[str] = field(default_factory=list)  # e.g. a truncated archive

    @property
    def regular(self) -> bool:
        """A regular file: it can be opened again and read at any offset."""
        return self.size is not None

    @property
    def seekable(self) -> bool:
        """Plain files are mmapped and split among workers; the rest are streams."""
        return self.regular and self.compression is None


def resolve(arguments: list[str], host: str | None = None) -> list[Input]:
    """Expand globs and check every input exists and is a readable file."""
    if not arguments:
        raise UsageError("no input: give slow-log files, globs, or - for stdin")
    inputs: list[Input] = []
    for argument in arguments:
        if argument == "-":
            inputs.append(Input("-", None, None, None, host))
            continue
        paths = [argument]
        if glob.has_magic(argument) and not os.path.exists(argument):
            paths = sorted(glob.glob(argument))
            if not paths:
                raise UsageError(f"{argument}: no file matches")
        for path in paths:
            inputs.append(_check(path, host))
    if sum(1 for item in inputs if item.path is None) > 1:
        raise UsageError("-: stdin can be read only once")
    return inputs


def _check(path: str, host: str | None) -> Input:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{path}: is a directory (give the slow-log files in it, or a glob)")
    if not stat.S_ISREG(info.st_mode):
        # A FIFO or a pipe (<(zcat x.gz)) gives its bytes once: it is opened only when
        # read, and its compression is sniffed then, as stdin's.
        return Input(path, path, None, None, host)
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    compression = next((kind for magic, kind in _MAGIC if head.startswith(magic)), None)
    return Input(path, path, compression, info.st_size, host)


def check_text(name: str, head: bytes) -> None:
    """Refuse binary data: a slow log is text (its queries may hold a few odd bytes)."""
    if not head:
        return
    sample = head[:_SNIFF]
    if sample.count(b"\x00") > len(sample) // 100 and b"# " not in sample:
        raise UsageError(f"{name}: binary data, not a slow log")
    controls = sum(1 for byte in sample if byte < 9 or 13 < byte < 32)
    if controls > len(sample) // 10 and b"# Query_time:" not in sample:
        raise UsageError(f"{name}: binary data, not a slow log")


def open_mmap(path: str) -> mmap.mmap | bytes:
    """A read-only map of a plain file (an empty file maps to b"")."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            return b""
        return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)


class FileView:
    """``len`` and ``find`` over an open file through ``pread``: the few bytes read to
    find split points never enter the process's memory map. (Through a map, a page
    cache holding the file in 2 MB folios maps whole folios: 0.8 GB resident for the
    split points of a 5 GB log, measured.)"""

    WINDOW = 64 * 1024

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size

    def __len__(self) -> int:
        return self.size

    def read(self, start: int, length: int) -> bytes:
        return os.pread(self.fd, length, start)

    def find(self, needle: bytes, start: int) -> int:
        position = start
        while position < self.size:
            chunk = os.pread(self.fd, self.WINDOW + len(needle) - 1, position)
            found = chunk.find(needle)
            if found >= 0:
                return position + found
            position += self.WINDOW
        return -1


def split_points(data: mmap.mmap | bytes | FileView, parts: int, minimum: int) -> list[int]:
    """Offsets where workers start: 0, then just after a ``;\\n#`` near each 1/parts.

    Each is the start of a record exactly as pt would read it (a record ends at a
    separator), so ranges between them can be digested independently.
    """
    size = len(data)
    points = [0]
    if parts <= 1 or size < 2 * minimum:
        return points
    step = max(minimum, size // parts)
    target = step
    while target < size:
        cut = data.find(SEPARATOR, max(target, points[-1]))
        if cut < 0:
            break
        point = cut + len(SEPARATOR)
        if point >= size:
            break
        points.append(point)
        target = point + step
    return points


def _decompressor(kind: str) -> Any:
    if kind == "gzip":
        return zlib.decompressobj(wbits=31)
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    return lzma.LZMADecompressor()


def _decompressed(item: Input, chunks: Iterator[bytes]) -> Iterator[tuple[bytes, int]]:
    """Decompress member after member; a truncated archive yields all it holds, then ends."""
    kind = item.compression
    assert kind is not None
    decompressor = _decompressor(kind)
    for chunk in chunks:
        consumed = len(chunk)
        while chunk:
            try:
                data = decompressor.decompress(chunk)
            except (OSError, EOFError, lzma.LZMAError, zlib.error) as exc:
                raise UsageError(f"{item.name}: corrupt {kind} data: {exc}") from None
            yield data, consumed
            consumed = 0
            if decompressor.eof:
                chunk = decompressor.unused_data
                if chunk.strip(b"\x00"):
                    decompressor = _decompressor(kind)
                else:
                    chunk = b""
            else:
                chunk = b""
    if not decompressor.eof:
        item.problems.append(f"truncated {kind} data: digested what came before")


def stream_blocks(item: Input, block: int = BLOCK) -> Iterator[tuple[bytes, int]]:
    """The decompressed bytes of a stream input, block by block, with compressed bytes read.

    The input is opened once; what is not a regular file is sniffed for compression
    from its first bytes, which are then digested like the rest. A truncated archive
    ends the stream with a problem noted on ``item`` (what came before is digested);
    corrupt data is an error.
    """
    raw: IO[bytes] = sys.stdin.buffer if item.path is None else open(item.path, "rb")  # noqa: SIM115
    try:
        head = b""
        if not item.regular:
            head = raw.read(max(len(magic) for magic, _ in _MAGIC))
            item.compression = next(
                (kind for magic, kind in _MAGIC if head.startswith(magic)), None
            )
        if item.compression is None:
            data = head + raw.read(block - len(head))
            while data:
                yield data, len(data)
                data = raw.read(block)
            return
        pending: list[bytes] = []
        size = consumed = 0
        for data, used in _decompressed(item, _chunks(head, raw)):
            pending.append(data)
            size += len(data)
            consumed += used
            if size >= block:
                yield b"".join(pending), consumed
                pending, size, consumed = [], 0, 0
        if pending or consumed:
            yield b"".join(pending), consumed
    finally:
        if item.path is not None:
            raw.close()


def _chunks(head: bytes, raw: IO[bytes]) -> Iterator[bytes]:
    """``head`` (already read), then the rest of ``raw`` a megabyte at a time."""
    if head:
        yield head
    while chunk := raw.read(1 << 20):
        yield chunk


def total_size(inputs: Sequence[Input]) -> int | None:
    """Bytes to read, for a progress bar (None: some input's size is not known)."""
    if any(item.size is None for item in inputs):
        return None
    return sum(item.size or 0 for item in inputs)
