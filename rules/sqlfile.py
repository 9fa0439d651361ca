"""A SQL file read in pieces, as text: memory holds a piece, never the file.

UTF-8 as the mysql client sends it: a byte-order mark is dropped; bytes that are not UTF-8
(a BLOB as mariadb-dump writes it without --hex-blob) are read as U+FFFD and the first is
reported with its line; a binary file (NUL bytes in its first 64 KiB) is not read at all.
"""

from __future__ import annotations

import codecs
from typing import BinaryIO

_PROBE = 65536


class SqlFile:
    """``read(size)`` gives the next text of a binary handle, "" at its end; ``problem`` says
    what was wrong with the bytes, ``bytes_read`` how far it got (for progress)."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._lines = 0  # newlines in the bytes decoded so far
        self._head = handle.read(_PROBE)
        self.binary = b"\0" in self._head
        if self._head.startswith(b"\xef\xbb\xbf"):
            self._head = self._head[3:]
        self.bytes_read = len(self._head)
        #: (line, message) of the first bytes that were not UTF-8, or None.
        self.problem: tuple[int, str] | None = None

    def read(self, size: int) -> str:
        while True:
            if self._head:
                data, self._head = self._head, b""
            else:
                data = self._handle.read(size)
                self.bytes_read += len(data)
            text = self._decode(data, final=not data)
            if text or not data:
                return text

    def _decode(self, data: bytes, final: bool) -> str:
        pending = self._decoder.getstate()[0]
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            seen = pending + data
            line = self._lines + seen.count(b"\n", 0, exc.start) + 1
            self.problem = (
                line,
                f"not valid UTF-8 (first bad byte on line {line}): bad bytes read as U+FFFD "
                "(the server takes them as a binary string, as mariadb-dump writes BLOBs)",
            )
            self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
            text = self._decoder.decode(seen, final)
        self._lines += data.count(b"\n")
        return text
