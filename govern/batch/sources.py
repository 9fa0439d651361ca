"""Rows from CSV, TSV or JSON Lines files, each with the line it started on.

A row that cannot be read (bad quoting, wrong field count, bad JSON, bytes that
are not UTF-8, other keys than the first object's, a value no server column takes such as
``1e400``, a line longer than ``max_line``) comes out as a :class:`BadRow` naming its line,
so a loader can count and report it instead of dropping it or stopping. Lines are read in
pieces of at most ``max_line`` bytes: a 1 GB line costs ``max_line``, not a gigabyte. Files
may be gzip-compressed (``.gz``).
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from govern.errors import UsageError
from govern.units import size

FORMATS = ("csv", "tsv", "jsonl")
#: The longest line read whole (``--max-line``): MySQL 8's default max_allowed_packet; a
#: longer row would not fit in a statement on a server with default settings anyway.
DEFAULT_MAX_LINE = 64 << 20
#: What stands in for a line that was too long: one empty field, so the row it belongs to
#: comes out as a bad row (an empty line would be skipped as no row at all).
_TOO_LONG = b'""\n'
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
#: Field size limit for CSV: the server's own cap on a packet (1 GiB).
csv.field_size_limit(1 << 30)


@dataclasses.dataclass(frozen=True)
class BadRow:
    line: int
    reason: str


#: (line, values) for a good row, or a BadRow.
Record = tuple[int, tuple[Any, ...]] | BadRow


def detect_format(path: str, given: str | None) -> str:
    """``--format`` if given, else from the extension (``.gz`` looked through)."""
    if given:
        if given not in FORMATS:
            raise UsageError(f"--format {given}: use one of {', '.join(FORMATS)}")
        return given
    name = path[:-3] if path.endswith(".gz") else path
    fmt = _EXTENSIONS.get(Path(name).suffix.lower())
    if fmt is None:
        raise UsageError(f"{path}: cannot tell the format from the name; pass --format")
    return fmt


class RowFile:
    """An open input file: its columns (known after opening) and its records."""

    def __init__(
        self,
        path: str,
        fmt: str | None = None,
        *,
        null: str | None = "\\N",
        max_line: int = DEFAULT_MAX_LINE,
    ) -> None:
        self.name = "<stdin>" if path == "-" else path
        self.max_line = max_line
        self.format = detect_format(path, fmt) if path != "-" or fmt else _stdin_needs_format()
        self.null = null
        self._raw, self._binary = _open(path)
        self.total_bytes = _size(self._raw)
        self._line = 0
        self._bad_lines: dict[int, str] = {}
        self._ahead: list[Record] = []
        self.columns: tuple[str, ...] = ()
        self.header_line = 1
        if self.format == "jsonl":
            self._records = self._json_rows()
            self._read_first_object()
        else:
            self._records = self._csv_records()

    def close(self) -> None:
        self._binary.close()
        if self._raw is not self._binary:
            self._raw.close()

    def __enter__(self) -> RowFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def bytes_read(self) -> int:
        """How far into the (compressed) file reading got, for a progress bar."""
        try:
            return int(self._raw.tell())
        except (OSError, ValueError):
            return 0

    def records(self) -> Iterator[Record]:
        yield from self._ahead
        self._ahead = []
        yield from self._records

    # --- lines -------------------------------------------------------------------------
    def _lines(self) -> Iterator[str]:
        """Decoded lines; a line that is not UTF-8 is remembered and decoded with U+FFFD."""
        for raw in self._read_raw_lines():
            self._line += 1
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                self._bad_lines.setdefault(
                    self._line, f"not UTF-8 (byte {exc.start + 1} of the line)"
                )
                text = raw.decode("utf-8", "replace")
            if self._line == 1 and text.startswith("\ufeff"):
                text = text[1:]  # a byte-order mark
            yield text

    def _read_raw_lines(self) -> Iterator[bytes]:
        """Lines of at most ``max_line`` bytes; a longer one is read on in pieces, dropped,
        and stands as a bad line (its bytes are never held)."""
        read = self._binary.readline
        try:
            while line := read(self.max_line + 1):
                if len(line) > self.max_line and not line.endswith(b"\n"):
                    length = len(line)
                    while line and not line.endswith(b"\n"):
                        line = read(1 << 20)
                        length += len(line)
                    self._bad_lines[self._line + 1] = (
                        f"a line of {length:,} bytes, longer than --max-line ({size(self.max_line)})"
                    )
                    line = _TOO_LONG
                yield line
        except (OSError, EOFError) as exc:  # a truncated or corrupt .gz, a read error
            raise UsageError(f"{self.name}:{self._line + 1}: cannot read on ({exc})") from None

    # --- CSV and TSV --------------------------------------------------------------------
    def _csv_records(self) -> Iterator[Record]:
        delimiter = "\t" if self.format == "tsv" else ","
        reader = csv.reader(self._lines(), delimiter=delimiter, strict=True)
        header = self._csv_header(reader)
        self.columns = header
        return self._csv_rows(reader, len(header))

    def _csv_header(self, reader: Any) -> tuple[str, ...]:
        try:
            header = next(reader, None)
        except csv.Error as exc:
            raise UsageError(f"{self.name}:1: the header line is not valid CSV ({exc})") from None
        if not header:
            raise UsageError(f"{self.name}:1: no header line (the column names)")
        if 1 in self._bad_lines:
            raise UsageError(f"{self.name}:1: the header is {self._bad_lines[1]}")
        self.header_line = reader.line_num
        return tuple(name.strip() for name in header)

    def _csv_rows(self, reader: Any, width: int) -> Iterator[Record]:
        null = self.null
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield BadRow(start, f"not valid CSV ({exc})")
                continue
            if not fields:
                continue  # a blank line holds no row
            bad = [
                self._bad_lines.pop(n)
                for n in range(start, reader.line_num + 1)
                if n in self._bad_lines
            ]
            if bad:
                yield BadRow(start, bad[0])
            elif len(fields) != width:
                yield BadRow(start, f"{len(fields)} fields, the header has {width}")
            else:
                yield start, tuple(None if f == null else f for f in fields)

    # --- JSON Lines ----------------------------------------------------------------------
    def _read_first_object(self) -> None:
        """Read up to the first good object: its keys are the columns."""
        for record in self._records:
            self._ahead.append(record)
            if not isinstance(record, BadRow):
                return
        raise UsageError(f"{self.name}: no JSON object to take the column names from")

    def _json_rows(self) -> Iterator[Record]:
        keys: frozenset[str] | None = None
        first_line = 0
        for text in self._lines():
            line = self._line
            if not text.strip():
                continue
            if line in self._bad_lines:
                yield BadRow(line, self._bad_lines.pop(line))
                continue
            try:
                obj = json.loads(text, parse_constant=_not_a_number)
            except json.JSONDecodeError as exc:
                yield BadRow(line, f"not JSON ({exc.msg} at column {exc.colno})")
                continue
            except ValueError as exc:  # NaN, Infinity; a number of more than 4,300 digits
                yield BadRow(line, f"not JSON ({str(exc).split(';')[0]})")
                continue
            except RecursionError:
                yield BadRow(line, "not JSON (nested deeper than it can be read)")
                continue
            if not isinstance(obj, dict):
                yield BadRow(line, f"a JSON {type(obj).__name__}, not an object")
                continue
            if keys is None:
                self.columns, keys, first_line = tuple(obj), frozenset(obj), line
                self.header_line = line
            elif obj.keys() != keys:
                missing = sorted(keys.difference(obj))
                extra = sorted(set(obj).difference(keys))
                yield BadRow(
                    line,
                    f"other keys than line {first_line}"
                    f" (missing {missing or 'none'}, extra {extra or 'none'})",
                )
                continue
            try:
                yield line, tuple(_json_value(name, obj[name]) for name in self.columns)
            except _BadValue as exc:
                yield BadRow(line, str(exc))


class _BadValue(ValueError):
    """A value no column can take: the row is bad."""


def _not_a_number(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _json_value(name: str, value: Any) -> Any:
    """A value as it goes to the server: nested objects and arrays as JSON text (for JSON
    columns); numbers beyond a DOUBLE (``1e400``, read as infinity) and text that is no
    UTF-8 (a lone surrogate) are refused here, as the row they are in."""
    if isinstance(value, dict | list):
        try:
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except ValueError:
            raise _BadValue(f"{name}: a number in it is beyond a DOUBLE") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise _BadValue(f"{name}: a number beyond a DOUBLE (read as {value})")
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _BadValue(f"{name}: not UTF-8 (a lone surrogate)") from None
    return value


def _stdin_needs_format() -> str:
    raise UsageError("reading stdin (-): pass --format csv, tsv or jsonl")


def _open(path: str) -> tuple[IO[bytes], IO[bytes]]:
    """(the raw file, for positions; the stream to read lines from)."""
    if path == "-":
        return sys.stdin.buffer, sys.stdin.buffer
    try:
        raw = open(path, "rb")  # noqa: SIM115 (closed by RowFile.close)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    if path.endswith(".gz"):
        return raw, gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw, raw


def _size(raw: IO[bytes]) -> int | None:
    try:
        return os.fstat(raw.fileno()).st_size or None
    except (OSError, ValueError):
        return None
