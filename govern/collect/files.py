"""A slow-log file followed across appends and rotations (docs/design/collect.md, "Files").

The position of a followed log is a list of files, oldest first: the file at the
followed path, and before it any file rotated away that still has unread bytes.
Each is known by its device and inode, how far it was read, and a checksum of its
first bytes, so that a file replaced in place (copytruncate, or a new file that
got the old inode) is told apart from the one that was read:

* rename and create (logrotate's default): the old inode is found again among
  the rotated files beside the log (``slow.log.1``, ``slow.log-20261125``) and
  read to its end first; the server writes it until ``FLUSH SLOW LOGS``, so it
  is finished only once the new file has data;
* copytruncate: the file shrinks, or its first bytes change; what was not read
  yet is read from the copy (found by its first bytes, compressed or not), then
  the log again from its start;
* a rotated file compressed before its end was read (``slow.log.1.gz``) is found
  by the checksum of its decompressed first bytes and read from where the
  position stopped.

Only whole records are read while a file may grow: the text up to the last
``;\\n#``. The last record is read once the file has been quiet for ``settle``
seconds, or once the server has moved on to a new file.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import hashlib
import lzma
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from govern.collect.jsonlines import field_path, unwrap
from govern.collect.source import Progress, Text
from govern.errors import UsageError
from govern.slowlog import SEPARATOR

#: Bytes of a file's start whose checksum identifies it.
HEAD = 1024
#: At most this much text is read from one file in one go (more is read by the next).
BLOCK = 64 * 1024 * 1024

_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))
_OPENERS: dict[str, Any] = {"gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open}


@dataclass
class Tracked:
    """One file of a followed log and how far it was read."""

    name: str  # where it was last seen
    dev: int
    ino: int
    offset: int = 0  # bytes consumed (of the decompressed text, for a compressed file)
    lines: int = 0  # lines of text consumed (line numbers of samples)
    raw_lines: int = 0  # lines of the file consumed (the JSON lines of a wrapped log)
    head: str = ""  # sha1 of the first head_len bytes
    head_len: int = 0
    compression: str | None = None  # the file is now a compressed copy
    rotated: bool = False  # no longer the file at the followed path
    final: bool = False  # will not grow (a copy left by copytruncate)
    _stream: Any = field(default=None, repr=False, compare=False)  # open decompressor

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dev": self.dev,
            "ino": self.ino,
            "offset": self.offset,
            "lines": self.lines,
            "raw_lines": self.raw_lines,
            "head": self.head,
            "head_len": self.head_len,
            "compression": self.compression,
            "rotated": self.rotated,
            "final": self.final,
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Tracked:
        return cls(
            name=value["name"],
            dev=value["dev"],
            ino=value["ino"],
            offset=value["offset"],
            lines=value["lines"],
            raw_lines=value.get("raw_lines", value["lines"]),
            head=value["head"],
            head_len=value["head_len"],
            compression=value.get("compression"),
            rotated=value.get("rotated", False),
            final=value.get("final", False),
        )

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def compression_of(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError:
        return None
    return next((kind for magic, kind in _MAGIC if head.startswith(magic)), None)


def _checksum(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


class FollowedLog:
    """One slow-log path followed: reads what was appended since the last read."""

    def __init__(
        self,
        path: str,
        *,
        json_field: str | None = None,
        settle: float = 2.0,
        backfill: bool = False,
    ) -> None:
        self.path = os.path.abspath(path)
        self.key = f"file:{self.path}"
        self.label = path
        self.json_field = field_path(json_field) if json_field else ()
        self.settle = settle
        self.backfill = backfill
        self.files: list[Tracked] = []
        self.started = False
        self._current: os.stat_result | None = None  # the path, as the last refresh saw it
        #: [sha1, length] of the first bytes of files read to their end or there before
        #: the log was first followed: a rotated file that starts so is not read again.
        self.known: list[list[Any]] = []
        self._heads: dict[tuple[Any, ...], bytes] = {}
        self.skipped_lines = 0  # JSON lines with no slow-log text, ever

    # --- the checkpoint -----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "files": [tracked.to_json() for tracked in self.files],
            "known": self.known,
            "skipped_lines": self.skipped_lines,
        }

    def checkpoint(self) -> dict[str, Any]:
        return self.to_json()

    def restore(self, saved: dict[str, Any] | None) -> None:
        self.close()
        if saved is None:
            self.files, self.known, self.started = [], [], False
            return
        self.files = [Tracked.from_json(value) for value in saved.get("files", [])]
        self.known = [list(entry) for entry in saved.get("known", [])]
        self.skipped_lines = saved.get("skipped_lines", 0)
        self.started = True

    def close(self) -> None:
        for tracked in self.files:
            tracked.close()

    # --- reading ------------------------------------------------------------------------
    def refresh(self, reading: Progress) -> bool:
        """Notice rotations and learn the first bytes of the files before reading: True
        when that changed the position (the collector commits it at once, so a file is
        known by its first bytes even if reading it is interrupted)."""
        before = self.to_json()
        self._current = self._stat(self.path)
        if not self.started:
            self._start(self._current)
        else:
            self._reconcile(self._current, reading)
        for tracked in self.files:
            self._learn_head(tracked)
        self._discover()
        return self.to_json() != before

    def read(self, reading: Progress) -> Iterator[Text]:
        """Whole records appended since the last read, file by file, oldest first
        (after :meth:`refresh`).

        The position advances as each chunk is handed out: the caller commits it
        with the buckets the chunks fed, or discards it all."""
        current = self._current
        for index, tracked in enumerate(list(self.files)):
            last = index == len(self.files) - 1 and not tracked.rotated
            yield from self._read_file(tracked, last, current, reading)
        self.files = [t for t in self.files if t.offset >= 0]

    def _stat(self, path: str) -> os.stat_result | None:
        try:
            found = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise UsageError(f"{path}: {exc.strerror}") from None
        if stat.S_ISDIR(found.st_mode):
            raise UsageError(f"{path}: is a directory (give the slow-log file)")
        return found

    def _start(self, current: os.stat_result | None) -> None:
        """The first look at a log: its rotated files are history, read only with
        ``backfill`` (oldest first); otherwise remembered as read, never read later."""
        self.started = True
        if current is None:
            raise UsageError(f"{self.path}: no such file")
        for path in self._rotated_siblings():
            if self.backfill:
                found = os.stat(path)
                kind = compression_of(path)
                self.files.append(
                    Tracked(path, found.st_dev, found.st_ino, compression=kind, rotated=True)
                )
            else:
                first = self._first_bytes(path)
                if first:
                    self.known.append([_checksum(first), len(first)])
        self.files.append(Tracked(self.path, current.st_dev, current.st_ino))

    def _rotated_siblings(self) -> list[str]:
        """Files beside the log named after it (``slow.log.1``, ``slow.log-2026…gz``),
        oldest first."""
        folder, base = os.path.split(self.path)
        found = []
        try:
            entries = list(os.scandir(folder or "."))
        except OSError:
            return []
        for entry in entries:
            if entry.path == self.path or not entry.name.startswith(base):
                continue
            if entry.name[len(base) : len(base) + 1] not in (".", "-", "_"):
                continue
            try:
                if entry.is_file():
                    found.append((entry.stat().st_mtime, entry.path))
            except OSError:
                continue
        return [path for _, path in sorted(found)]

    def _reconcile(self, current: os.stat_result | None, reading: Progress) -> None:
        """Tell a rotation from an append; find rotated files that still have unread bytes."""
        last = self.files[-1] if self.files else None
        if last is None or last.rotated:
            if current is not None and not any(_same(t, current) for t in self.files):
                self.files.append(Tracked(self.path, current.st_dev, current.st_ino))
        elif current is not None and _same(last, current):
            if current.st_size < last.offset or not self._head_matches(self.path, last, None):
                self._truncated(last, reading)
        else:
            last.rotated = True
            if current is not None:
                self.files.append(Tracked(self.path, current.st_dev, current.st_ino))
        for tracked in list(self.files):
            if tracked.rotated and not self._locate(tracked, reading):
                if tracked.offset:
                    reading.problems.append(
                        f"{tracked.name}: rotated away and not found beside {self.path} (not"
                        f" as {os.path.basename(self.path)}.N nor compressed): what was written"
                        f" after byte {tracked.offset:,} of it is lost"
                    )
                # Nothing of it was read: its content, wherever it went, is discovered.
                tracked.close()
                tracked.offset = -1
        self.files = [t for t in self.files if t.offset >= 0]

    def _truncated(self, tracked: Tracked, reading: Progress) -> None:
        """A followed file was cut back (copytruncate): its unread end is in the copy, and
        it is read again from its start."""
        copy = self._find_copy(tracked, exclude_inode=True)
        if copy is not None:
            path, kind = copy
            found = os.stat(path)
            rest = Tracked(path, found.st_dev, found.st_ino, tracked.offset, tracked.lines)
            rest.head, rest.head_len = tracked.head, tracked.head_len
            rest.compression, rest.rotated, rest.final = kind, True, True
            self.files.insert(self.files.index(tracked), rest)
        elif tracked.offset:
            reading.problems.append(
                f"{tracked.name}: truncated in place and no copy of it found beside it: what"
                f" was written after byte {tracked.offset:,} before the truncation is lost"
            )
        tracked.close()
        tracked.offset = tracked.lines = tracked.raw_lines = tracked.head_len = 0
        tracked.head = ""

    def _locate(self, tracked: Tracked, reading: Progress) -> bool:
        """Find a rotated file again: by inode (plain), else by its first bytes (a copy,
        compressed or not). A file found by inode that no longer starts as it did was cut
        back before it was renamed: read from its start, its unread end from a copy."""
        if tracked.compression is not None:
            return os.path.exists(tracked.name) and self._head_matches(
                tracked.name, tracked, tracked.compression
            )
        for path in [tracked.name, *self._rotated_siblings()]:
            found = self._stat_quietly(path)
            if found is None or not _same(tracked, found):
                continue
            tracked.name = path
            if found.st_size < tracked.offset or not self._head_matches(path, tracked, None):
                self._truncated(tracked, reading)
            return True
        copy = self._find_copy(tracked, exclude_inode=False)
        if copy is None:
            return False
        path, kind = copy
        found = os.stat(path)
        tracked.close()
        tracked.name, tracked.compression = path, kind
        tracked.dev, tracked.ino, tracked.final = found.st_dev, found.st_ino, True
        return True

    def _find_copy(self, tracked: Tracked, *, exclude_inode: bool) -> tuple[str, str | None] | None:
        """A rotated file holding the same first bytes and at least ``offset`` bytes."""
        if not tracked.head_len:
            return None  # nothing of it is known: nothing to recognise it by
        for path in reversed(self._rotated_siblings()):
            found = self._stat_quietly(path)
            if found is None or (exclude_inode and _same(tracked, found)):
                continue
            kind = compression_of(path)
            if kind is None and found.st_size < tracked.offset:
                continue
            if self._head_matches(path, tracked, kind):
                return path, kind
        return None

    def _discover(self) -> None:
        """Rotated files whose content the collector never saw (a file that was rotated,
        or cut back and rotated, before it was read): read them too, oldest first, before
        the file at the path. A file is known by its first bytes: those of a file followed
        or read to its end, or there before the log was first followed."""
        identities = [(t.head, t.head_len) for t in self.files if t.head_len]
        identities += [(head, length) for head, length in self.known]
        followed = {(t.dev, t.ino) for t in self.files}
        present: set[tuple[str, int]] = set()
        found: list[Tracked] = []
        for path in self._rotated_siblings():
            first = self._first_bytes(path)
            info = self._stat_quietly(path)
            if not first or info is None:
                continue
            matched = [
                (head, length)
                for head, length in identities
                if len(first) >= length and _checksum(first[:length]) == head
            ]
            present.update(matched)
            if matched or (info.st_dev, info.st_ino) in followed:
                continue
            kind = compression_of(path)
            tracked = Tracked(path, info.st_dev, info.st_ino, compression=kind, rotated=True)
            tracked.final = kind is not None
            tracked.head, tracked.head_len = _checksum(first), len(first)
            identities.append((tracked.head, tracked.head_len))
            found.append(tracked)
        if found:
            at = next((i for i, t in enumerate(self.files) if not t.rotated), len(self.files))
            self.files[at:at] = found
        # Forget files gone from beside the log (the list stays as long as the rotation keeps).
        self.known = [entry for entry in self.known if tuple(entry) in present]

    def _first_bytes(self, path: str) -> bytes:
        """The first bytes of a file (decompressed), cached while it does not change."""
        info = self._stat_quietly(path)
        if info is None:
            return b""
        key = (path, info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        found = self._heads.get(key)
        if found is None:
            try:
                with _open(path, compression_of(path)) as handle:
                    found = handle.read(HEAD)
            except (OSError, EOFError, lzma.LZMAError):
                found = b""
            if len(self._heads) > 10_000:
                self._heads.clear()
            self._heads[key] = found
        return found

    @staticmethod
    def _stat_quietly(path: str) -> os.stat_result | None:
        try:
            return os.stat(path)
        except OSError:
            return None

    @staticmethod
    def _head_matches(path: str, tracked: Tracked, kind: str | None) -> bool:
        """Does the file at ``path`` (compressed with ``kind``) start as ``tracked`` did?"""
        if not tracked.head_len:
            return True
        try:
            with _open(path, kind) as handle:
                data = handle.read(tracked.head_len)
        except (OSError, EOFError, lzma.LZMAError):
            return False
        return len(data) == tracked.head_len and _checksum(data) == tracked.head

    @staticmethod
    def _learn_head(tracked: Tracked) -> None:
        """Checksum the first bytes of a file as soon as it has them (they never change
        while it is only appended to; a file whose known head changed was cut back, which
        :meth:`_reconcile` sees first)."""
        if tracked.head_len >= HEAD:
            return
        try:
            with _open(tracked.name, tracked.compression) as handle:
                head = handle.read(HEAD)
        except (OSError, EOFError, lzma.LZMAError):
            return
        if len(head) > tracked.head_len and (
            not tracked.head_len or _checksum(head[: tracked.head_len]) == tracked.head
        ):
            tracked.head, tracked.head_len = _checksum(head), len(head)

    def _done(self, tracked: Tracked) -> None:
        """A rotated file read to its end: dropped, its first bytes remembered."""
        tracked.close()
        if tracked.head_len and [tracked.head, tracked.head_len] not in self.known:
            self.known.append([tracked.head, tracked.head_len])
        tracked.offset = -1

    # --- reading one file --------------------------------------------------------------
    def _read_file(
        self,
        tracked: Tracked,
        last: bool,
        current: os.stat_result | None,
        reading: Progress,
    ) -> Iterator[Text]:
        """Whole records of ``tracked`` from its offset; a rotated file is done (dropped)
        once read to its end after the server moved on."""
        if tracked.compression is not None:
            yield from self._read_compressed(tracked, reading)
            return
        try:
            handle = open(tracked.name, "rb")  # noqa: SIM115
        except OSError as exc:
            raise UsageError(f"{tracked.name}: cannot read: {exc.strerror}") from None
        with handle:
            fd = handle.fileno()
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != (tracked.dev, tracked.ino):
                reading.caught_up = False  # rotated between the look and the read: next poll
                return
            # The server has moved on to the file at the path: nothing more comes here.
            finished = tracked.final or (not last and current is not None and current.st_size > 0)
            whole_ok = finished or time.time() - info.st_mtime >= self.settle
            length = BLOCK
            while reading.budget > 0:
                size = os.fstat(fd).st_size
                if tracked.offset >= size:
                    break
                raw = os.pread(fd, min(size - tracked.offset, length), tracked.offset)
                if not _starts_as(fd, tracked):
                    # cut back since refresh (copytruncate) and written again: ``raw`` may
                    # be the new content at the old offset. The next poll reads the rest
                    # from the copy, then the new content from its start.
                    reading.caught_up = False
                    break
                ends = tracked.offset + len(raw) >= size
                taken = self._take(tracked, raw, ends and whole_ok, reading)
                if taken is None:
                    if ends:
                        break  # the last record is still being written
                    length *= 2  # one record longer than a block: read more of it
                    continue
                length = BLOCK
                yield taken[0]
            behind = os.fstat(fd).st_size - tracked.offset
        reading.behind += behind
        if reading.budget <= 0 and behind:
            reading.caught_up = False
        if tracked.rotated and finished and behind == 0:
            self._done(tracked)

    def _take(
        self, tracked: Tracked, raw: bytes, whole: bool, reading: Progress
    ) -> tuple[Text, int] | None:
        """The whole records at the start of ``raw`` (all of it if ``whole``) as a chunk,
        the position advanced past them; None when ``raw`` holds no whole record."""
        if self.json_field:
            unwrapped = unwrap(raw, self.json_field, complete=whole)
            for number, why in unwrapped.skipped:
                self.skipped_lines += 1
                if len(reading.problems) < 10:
                    reading.problems.append(
                        f"{tracked.name}:{tracked.raw_lines + number}: skipped: {why}"
                    )
            if unwrapped.consumed == 0:
                return None
            text, used = unwrapped.text, unwrapped.consumed
        elif whole:
            text, used = raw, len(raw)
        else:
            cut = raw.rfind(SEPARATOR)
            if cut < 0:
                return None
            text, used = raw, cut + len(SEPARATOR) - 1
        counted = functools.partial(_count_lines, tracked, not self.json_field)
        size = len(text) if self.json_field else used
        chunk = Text(text, tracked.name, tracked.lines, counted, size)
        tracked.offset += used
        if self.json_field:
            tracked.raw_lines += raw.count(b"\n", 0, used)
        reading.budget -= used
        return chunk, used

    def _read_compressed(self, tracked: Tracked, reading: Progress) -> Iterator[Text]:
        """A compressed rotated file: decompressed from where the position stopped, to its
        end (the decompressor stays open between reads of one process)."""
        try:
            if tracked._stream is None:
                tracked._stream = _open(tracked.name, tracked.compression)
                skip = tracked.offset
                while skip:
                    block = tracked._stream.read(min(skip, BLOCK))
                    if not block:
                        break
                    skip -= len(block)
            pending = b""
            while reading.budget > 0:
                block = tracked._stream.read(BLOCK)
                pending += block
                if not pending:
                    break
                taken = self._take(tracked, pending, not block, reading)
                if taken is None:
                    if not block:
                        break
                    continue
                pending = pending[taken[1] :]
                yield taken[0]
            else:
                if pending:  # out of budget: the next read starts at the offset again
                    tracked.close()
                reading.caught_up = False
                return
        except (OSError, EOFError, lzma.LZMAError) as exc:
            reading.problems.append(f"{tracked.name}: corrupt {tracked.compression} data: {exc}")
        self._done(tracked)


def _count_lines(tracked: Tracked, plain: bool, lines: int) -> None:
    """The digest counted the lines of a chunk read from ``tracked`` (of a plain log, the
    file's lines too; a JSON-wrapped log counts those when it reads them)."""
    tracked.lines += lines
    if plain:
        tracked.raw_lines += lines


def _starts_as(fd: int, tracked: Tracked) -> bool:
    """Does the open file still start as ``tracked`` did (not cut back under the reader)?"""
    if not tracked.head_len:
        return True
    data = os.pread(fd, tracked.head_len, 0)
    return len(data) == tracked.head_len and _checksum(data) == tracked.head


def _same(tracked: Tracked, found: os.stat_result) -> bool:
    return (tracked.dev, tracked.ino) == (found.st_dev, found.st_ino)


def _open(path: str, kind: str | None) -> IO[bytes]:
    if kind is None:
        return open(path, "rb")
    opened: IO[bytes] = _OPENERS[kind](path, "rb")
    return opened
