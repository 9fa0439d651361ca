"""Streaming slow-log parser: MySQL 5.0–8.x, Percona Server and MariaDB formats.

govern reads a slow log exactly as pt-query-digest's ``SlowLogParser`` does, so
both tools see the same events (the conformance tests compare class by class):

* The text is cut into records at every ``;\\n#`` (Perl's ``$/``); the ``#`` that
  ends one record starts the next one's first line.
* Server start-up banners (``Tcp port:``, ``… mysqld, Version: … started with:``,
  ``Time Id Command Argument``) are removed wherever they appear, and counted. pt's
  banner pattern only knows ``mysqld``; govern's also knows MariaDB's ``mariadbd,
  Version`` line, so a MariaDB banner ends the event before it instead of gluing it
  to the one after (a deliberate difference from pt, docs/design/digest-engines.md).
* In a record, the leading lines that start with ``#``, ``use `` or
  ``SET timestamp|insert_id|last_insert_id`` are the header; the statement is
  everything from the first other line on.
* Header lines: the first ``# Time:`` gives ``ts``; ``# User@Host:`` gives user,
  host, ip and (MySQL 5.7+) the connection id; ``# administrator command: X``
  is the statement; any ``# Name: value`` line gives attributes; ``use db``
  gives ``db``.
* A record with no statement line takes pt's fallback: the next ``;\\n``-ended
  piece of text becomes an administrator command, or, when it looks like a
  header, the event is ``/* No query */``. These are the only reads that cross a
  record boundary; :func:`read_records` reports how far it read.

Nothing here aggregates: the digest engine (govern/digest/engine.py) calls
:func:`read_records` and :func:`parse_record` on byte ranges, and
:func:`iter_events` / :func:`parse_event` give the same parse as plain
:class:`Event` objects for library users (the rules need single events).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import cast

__all__ = [
    "Event",
    "RawEvent",
    "banner_lines",
    "iter_events",
    "normalize_time",
    "parse_event",
    "parse_record",
    "read_records",
]

SEPARATOR = b";\n#"
_VERSION_LINE = rb"[/A-Z].*(?:mysqld|mariadbd),\sVersion.*(?:started\swith:|embedded\slibrary)"
_BANNER = re.compile(
    rb"^(?:T[cC][pP]\s[pP]ort:\s+\d+|" + _VERSION_LINE + rb"|Time\s+Id\s+Command).*\n", re.M
)
#: One per banner: the line that names the server and its version.
_BANNER_START = re.compile(rb"^" + _VERSION_LINE, re.M)
_BANNER_TCP_OR_TIME = re.compile(rb"\n(?:T[cC][pP]\s[pP]ort:|Time\s+Id\s+Command)")
_STRIP_END = re.compile(rb";\n#?(?=\n?\Z)")
_STATEMENT_START = re.compile(rb"\n(?!#|use |SET (?:last_insert_id|insert_id|timestamp))")
_TS = re.compile(rb"# Time: ((?:[0-9: ]{15})|(?:[-0-9: T]{19}))")
_USER_HOST = re.compile(rb"# User@Host: ([^\[]+|\[[^[]+\]).*?@ (\S*) \[(.*)\]\s*(?:Id:\s*(\d+))?")
_ADMIN = re.compile(rb"# administrator command:")
_ADMIN_PREFIX = re.compile(rb"#\s+")
_ATTRIBUTE_LINE = re.compile(rb"# +[A-Z][A-Za-z_]+: \S+")
_EMPTY_SCHEMA = re.compile(rb"Schema:\s+\w+: ")
_EMPTY_SCHEMA_CUT = re.compile(rb"Schema:\s+")
_PAIRS = re.compile(rb"(\w+):\s+(\S+|$)")
_USE = re.compile(rb"use ([^;]+)")
_SET = re.compile(rb"SET\s+[^;]*")
_NEXT_IS_HEADER = re.compile(rb"\s*[A-Z][a-z_]+: ")
_LEADING_SPACE = re.compile(rb"\A\s+")

NO_QUERY = b"/* No query */"


def normalize_time(raw: bytes) -> str | None:
    """pt's ``# Time:`` value as ``YYYY-MM-DD HH:MM:SS`` (sorts as text), or None.

    Accepts ``YYMMDD H:MM:SS`` (MySQL 5.x, MariaDB; the hour may be space-padded)
    and ISO ``YYYY-MM-DDTHH:MM:SS`` (MySQL 5.7+; pt drops fractions and zone).
    """
    text = raw.decode("ascii", "replace").strip()
    if len(text) >= 19 and text[4] == "-":
        return text[:10] + " " + text[11:19]
    parts = text.split()
    if len(parts) != 2 or len(parts[0]) != 6 or not parts[0].isdigit():
        return None
    day, clock = parts
    pieces = clock.split(":")
    if len(pieces) != 3 or not all(p.isdigit() for p in pieces):
        return None
    hour, minute, second = (int(p) for p in pieces)
    return f"20{day[:2]}-{day[2:4]}-{day[4:6]} {hour:02d}:{minute:02d}:{second:02d}"


# --- records: pt's reading of the text ----------------------------------------------


class Record:
    """One record as pt reads it: header and statement text, where it starts.

    ``text`` has '#' restored at the start and ';\\n#' cut at the end; ``split`` is
    the index of the newline that ends the header (-1: no statement line);
    ``forced_arg`` is set by the no-statement fallback (``admin``: it read an
    administrator command); ``banners`` counts the server banners removed from it.
    A plain class: one is made per event.
    """

    __slots__ = ("admin", "banners", "forced_arg", "offset", "split", "text")

    def __init__(
        self,
        offset: int,
        text: bytes,
        split: int = -1,
        forced_arg: bytes | None = None,
        admin: bool = False,
        banners: int = 0,
    ) -> None:
        self.offset = offset
        self.text = text
        self.split = split
        self.forced_arg = forced_arg
        self.admin = admin
        self.banners = banners


def read_records(
    buf: bytes, pos: int, stop: int, *, at_start: bool, end: int | None = None
) -> tuple[list[Record], int]:
    """Records whose text starts in ``buf[pos:stop]``, read as pt does; and where reading ended.

    ``pos`` is the start of the input (``at_start``) or just after a ``;\n#``.
    The last record may run past ``stop`` up to ``end`` (default: the end of
    ``buf``), which must be the end of the input or a separator's end. The
    returned position is normally the separator end at or after ``stop``; pt's
    fallback can carry it further (the caller then re-reads what follows).
    """
    data = buf
    limit = len(data) if end is None else end
    records: list[Record] = []
    pending: list[tuple[int, bytes]] = []
    find = data.find
    # Banners are looked for up to the end of the record that crosses ``stop``;
    # a record beyond that (pt's fallback reads on) takes the general path below.
    scanned = find(SEPARATOR, stop, limit)
    scanned = limit if scanned < 0 else scanned + len(SEPARATOR)
    banners = banner_lines(data, pos, scanned)

    def next_piece(separator: bytes) -> tuple[int, bytes] | None:
        nonlocal pos
        if pos >= limit:
            return None
        start = pos
        cut = find(separator, pos, limit)
        pos = limit if cut < 0 else cut + len(separator)
        return start, data[start:pos]

    while pending or pos < stop:
        at_end = False  # the record runs to the end of the input (it may be cut short)
        removed = 0  # banners removed from this record
        if pending:
            offset, text = pending.pop(0)
        else:
            if pos >= limit:
                break
            offset = pos
            cut = find(SEPARATOR, pos, limit)
            if cut >= 0 and cut + 3 <= scanned and data[pos : pos + 1] not in _MAY_START_BANNER:
                following = cut + 3
                if not banners or bisect_left(banners, following) == bisect_left(banners, pos):
                    # The usual record: no banner, ends with a separator. Reuse the
                    # separator's '#' in front rather than copying the text again.
                    pos = following
                    if data[offset : offset + 1] == b"#" or offset == 0:
                        text = data[offset:cut]
                        if not text.startswith(b"#"):
                            text = b"#" + text
                    elif data[offset - 1 : offset] == b"#":
                        text = data[offset - 1 : cut]
                    else:
                        text = b"#" + data[offset:cut]
                    _append(records, offset, text, pending, next_piece)
                    continue
            piece = next_piece(SEPARATOR)
            assert piece is not None
            offset, text = piece
            at_end = pos == len(data) and not text.endswith(SEPARATOR)
            if text[:1] not in b"# \n":  # a banner or stray text first: point at the header
                header = text.find(b"\n#")
                if header >= 0:
                    offset += header + 1
        if _BANNER.search(text):
            removed = len(_BANNER_START.findall(text))
            text = _BANNER.sub(b"", text)
            chunks = text.split(SEPARATOR)
            while chunks and not chunks[-1]:
                chunks.pop()
            if len(chunks) > 1:
                text = chunks[0]
                pending[0:0] = [(offset, chunk) for chunk in chunks[1:]]
        if not text.startswith(b"#"):
            text = b"#" + text
        text = text[:-3] if text.endswith(SEPARATOR) else _STRIP_END.sub(b"", text, count=1)
        _append(records, offset, text, pending, next_piece, at_end)
        records[-1].banners = removed
    return records, pos


def banner_lines(data: bytes, pos: int, limit: int) -> list[int]:
    """Where banner lines start in ``data[pos:limit]``, sorted.

    Found from their literal parts (fast) and confirmed with pt's pattern: running
    the pattern over every line costs more than reading the whole log.
    """
    starts = {m.start() + 1 for m in _BANNER_TCP_OR_TIME.finditer(data, pos, limit)}
    at = data.find(b"Version", pos, limit)
    while at >= 0:
        starts.add(data.rfind(b"\n", pos, at) + 1 or pos)
        at = data.find(b"Version", at + 1, limit)
    starts.add(pos)
    return sorted(line for line in starts if _BANNER.match(data, line, limit))


_MAY_START_BANNER = frozenset(bytes([c]) for c in b"/ABCDEFGHIJKLMNOPQRSTUVWXYZ") | {b""}


def _append(
    records: list[Record],
    offset: int,
    text: bytes,
    pending: list[tuple[int, bytes]],
    next_piece: Callable[[bytes], tuple[int, bytes] | None],
    at_end: bool = False,
) -> None:
    """Add one record; without a statement line, take pt's fallback (reads on).

    A record at the very end of the input whose statement is empty was cut short:
    it is marked (``forced_arg`` empty) so the digest reports it.
    """
    start = _STATEMENT_START.search(text)
    if start:
        if at_end and not text[start.end() :].strip():
            records.append(Record(offset, text, forced_arg=b""))
            return
        records.append(Record(offset, text, start.start()))
        return
    if _has_inline_admin(text):
        records.append(Record(offset, text))
        return
    following = next_piece(b";\n")
    if following is None:
        records.append(Record(offset, text, forced_arg=b""))  # dropped: truncated at EOF
        return
    if _NEXT_IS_HEADER.match(following[1]):
        rest = next_piece(SEPARATOR)
        pending.append((following[0], following[1] + (rest[1] if rest else b"")))
        records.append(Record(offset, text, forced_arg=NO_QUERY))
    else:
        command = following[1][:-2] if following[1].endswith(b";\n") else following[1]
        command = _LEADING_SPACE.sub(b"", command)
        records.append(Record(offset, text, forced_arg=command, admin=True))


def _has_inline_admin(text: bytes) -> bool:
    """``# administrator command: …`` is a header line that is also the statement."""
    return b"# administrator command:" in text and any(
        _ADMIN.match(line) for line in text.split(b"\n")
    )


# --- one record -> one event ---------------------------------------------------------


class RawEvent:
    """What pt knows about an event, values still as bytes (the engine's input).

    A plain class rather than a dataclass: the engine makes one per event, and a
    dataclass's generated __init__ with defaults costs three times as much.
    """

    __slots__ = ("admin", "arg", "attributes", "db", "host", "ip", "thread", "ts", "user")

    def __init__(self, arg: bytes, admin: bool) -> None:
        self.arg = arg
        self.admin = admin
        self.attributes: dict[bytes, bytes] = {}
        self.ts: str | None = None
        self.user: bytes | None = None
        self.host: bytes | None = None
        self.ip: bytes | None = None
        self.thread: bytes | None = None
        self.db: bytes | None = None


#: Line -> its parse, shared by all records: most header lines repeat exactly.
_LINE_CACHE: dict[bytes, tuple[int, object]] = {}
_LINE_CACHE_LIMIT = 50_000

_Candidates = tuple[
    str | None,
    tuple[bytes, bytes, bytes, bytes | None] | None,
    bytes | None,
    tuple[tuple[bytes, bytes], ...] | None,
    bytes | None,
]
# Kinds of header line: nothing for pt, only attributes (the usual), or anything else.
_NOTHING, _ATTRIBUTES, _OTHER = 0, 1, 2


def _line_info(line: bytes) -> tuple[int, object]:
    """What a header line may give pt: (kind, attribute pairs or all the candidates).

    The candidates, for kind _OTHER, are (ts, user-host, admin, attributes, use-db):
    which one pt takes depends on what earlier lines of the record gave.
    """
    if len(_LINE_CACHE) > _LINE_CACHE_LIMIT:
        _LINE_CACHE.clear()
    ts = user_host = admin = attributes = use = None
    if line.startswith(b"#"):
        time_match = _TS.match(line)
        if time_match:
            ts = normalize_time(time_match.group(1))
            if ts is None:
                ts = time_match.group(1).decode("ascii", "replace")
        if b"User@Host:" in line:
            uh = _USER_HOST.search(line)
            if uh:
                user_host = (uh.group(1), uh.group(2) or uh.group(3), uh.group(3), uh.group(4))
        if _ADMIN.match(line):
            admin = _ADMIN_PREFIX.sub(b"", line, count=1)
        if _ATTRIBUTE_LINE.match(line):
            text = line
            if _EMPTY_SCHEMA.search(text):
                text = _EMPTY_SCHEMA_CUT.sub(b"", text, count=1)
            attributes = tuple(_PAIRS.findall(text))
    elif line.startswith(b"use "):
        use_match = _USE.match(line)
        if use_match:
            use = use_match.group(1)
    candidates = (ts, user_host, admin, attributes, use)
    if candidates == (None, None, None, attributes, None):
        info: tuple[int, object] = (
            (_NOTHING, None) if attributes is None else (_ATTRIBUTES, attributes)
        )
    else:
        info = (_OTHER, candidates)
    _LINE_CACHE[line] = info
    return info


def parse_record(record: Record) -> RawEvent:
    """The event pt builds from one record (``arg`` empty: pt drops the event)."""
    text = record.text
    if record.forced_arg is not None:
        header, arg = text, record.forced_arg
    elif record.split >= 0:
        header, arg = text[: record.split], text[record.split + 1 :]
    else:
        header, arg = text, b""
    event = RawEvent(arg, record.admin)
    got_ts = got_uh = got_ac = got_db = False
    attributes = event.attributes
    cached = _LINE_CACHE.get
    for line in header.split(b"\n"):
        kind, found = cached(line) or _line_info(line)
        if kind == _ATTRIBUTES:
            attributes.update(found)  # type: ignore[call-overload]
            continue
        if kind == _NOTHING:
            continue
        ts, user_host, admin, pairs, use = cast(_Candidates, found)
        if ts is not None and not got_ts:
            event.ts = ts
            got_ts = True
            if user_host is not None and not got_uh:
                event.user, event.host, event.ip, event.thread = user_host
                got_uh = True
        elif user_host is not None and not got_uh:
            event.user, event.host, event.ip, event.thread = user_host
            got_uh = True
        elif admin is not None and not got_ac:
            # pt pushes ``arg`` for the admin line; a statement line after the header
            # pushes it again and wins (``{ @properties }``: later keys win).
            if record.split < 0:
                event.arg = admin
            event.admin = got_ac = True
        elif pairs is not None:
            attributes.update(pairs)
        elif use is not None and not got_db:
            event.db = use
            got_db = True
    if event.db is None:
        schema = attributes.get(b"Schema")
        if schema is not None:
            event.db = schema
    return event


# --- the library view ----------------------------------------------------------------


@dataclass
class Event:
    """One slow-log event, decoded for people and rules (not used by the digest engine)."""

    query: str
    attributes: dict[str, str]
    ts: str | None = None
    user: str | None = None
    host: str | None = None
    db: str | None = None
    thread_id: int | None = None
    admin: bool = False
    line: int = 1

    @property
    def query_time(self) -> float | None:
        value = self.attributes.get("Query_time")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "backslashreplace")


def to_event(raw: RawEvent, line: int = 1) -> Event:
    attributes = {_text(k) or "": _text(v) or "" for k, v in raw.attributes.items()}
    thread = raw.thread or raw.attributes.get(b"Thread_id") or raw.attributes.get(b"Id")
    return Event(
        query=_text(raw.arg) or "",
        attributes=attributes,
        ts=raw.ts,
        user=_text(raw.user),
        host=_text(raw.host),
        db=_text(raw.db.strip(b"`") if raw.db is not None else None),
        thread_id=int(thread) if thread and thread.isdigit() else None,
        admin=raw.admin,
        line=line,
    )


def iter_events(data: bytes | str) -> Iterator[Event]:
    """Every event of a slow log held in memory, as pt-query-digest would see it."""
    buf = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    records, _ = read_records(buf, 0, len(buf), at_start=True)
    for record in records:
        raw = parse_record(record)
        if raw.arg and raw.arg != b"0":
            yield to_event(raw, line=buf.count(b"\n", 0, record.offset) + 1)


def parse_event(text: bytes | str) -> Event | None:
    """The first event in ``text`` (one slow-log entry), or None if it has no statement."""
    return next(iter_events(text), None)
