"""pt-query-digest-compatible query fingerprints and query IDs.

A fingerprint is a query with its literals abstracted (``WHERE id = 5`` ->
``where id = ?``), so statements that differ only in values fall in one class.
This module reproduces ``QueryRewriter::fingerprint`` of pt-query-digest
(percona-toolkit 3.x) byte for byte, defects included, so govern's query IDs
join with pt-query-digest, PMM and Anemometer data. The algorithm, step by step,
and the defects kept for compatibility are specified in docs/design/digest-engines.md.

Everything works on bytes, as Perl does: ``lc``, ``\\w`` and ``\\s`` are
ASCII-only, and the query ID is the MD5 of the fingerprint's bytes. Text in
other encodings (or broken UTF-8) is therefore handled exactly as pt does.

Two entry points compute the same function:

* :func:`fingerprint_bytes` (and :func:`fingerprint` for ``str``): one query,
  a literal port of the Perl code; the reference.
* :func:`fingerprint_many`: many queries at once. It joins them with NUL bytes
  and runs each rewriting step once over the joined text, so the regex engine
  (C) does the work instead of the interpreter. Every pattern is rewritten so
  that it cannot cross a NUL; queries that contain NUL, or that a special case
  applies to, go through the reference. tests/digest/test_fingerprint.py checks the two
  against each other and against pt-query-digest's own Perl code.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

__all__ = [
    "cache_key",
    "fingerprint",
    "fingerprint_bytes",
    "fingerprint_many",
    "query_id",
    "short_id",
]

# --- the reference: QueryRewriter::fingerprint, line by line ------------------------

_MYSQLDUMP = re.compile(rb"SELECT /\*!40001 SQL_NO_CACHE \*/ \* FROM `")
_PT_CHECKSUM = re.compile(rb"/\*\w+\.\w+:[0-9]/[0-9]\*/")
_ADMIN = b"administrator command: "
_CALL = re.compile(rb"\s*(call\s+\S+)\(", re.I)
_MULTI_INSERT = re.compile(
    rb"((?:INSERT|REPLACE)(?: IGNORE)?\s+INTO.+?VALUES\s*\(.*?\))\s*,\s*\(", re.I | re.S
)
_MULTI_LINE_COMMENT = re.compile(rb"/\*[^!].*?\*/", re.S)
# Perl's \Z is "end, or before a final newline"; Python's is the absolute end.
_ONE_LINE_COMMENT = re.compile(rb"(?:--|#)[^'\"\r\n]*(?=[\r\n]|\Z)")
_USE = re.compile(rb"\Ause \S+(?=\n?\Z)", re.I)
_ESCAPED_QUOTE = re.compile(rb"\\[\"']")
_DOUBLE_QUOTED = re.compile(rb'".*?"', re.S)
_SINGLE_QUOTED = re.compile(rb"'.*?'", re.S)
_BOOLEAN = re.compile(rb"\bfalse\b|\btrue\b", re.I)
_NUMBER = re.compile(rb"[0-9+-][0-9a-f.xb+-]*")
_NUMBER_PREFIX = re.compile(rb"[xb.+-]\?")
_LEADING_SPACE = re.compile(rb"\A\s+")
_SPACES = re.compile(rb"[ \n\t\r\f]+")
_NULL = re.compile(rb"\bnull\b")
_IN_LIST = re.compile(rb"\b(in|values?)(?:[\s,]*\([\s?,]*\))+")
_UNION = re.compile(rb"\b(select\s.*?)(?:(\sunion(?:\sall)?)\s\1)+")
_LIMIT = re.compile(rb"\blimit \?(?:, ?\?| offset \?)?")
_ORDER_BY = re.compile(rb"\bORDER BY ", re.I)
_ASC = re.compile(rb"(.+?)\s+ASC", re.I)


def _special_case(query: bytes) -> bytes | None:
    """pt's early returns: mysqldump, percona-toolkit checksums, admin commands, CALL."""
    if _MYSQLDUMP.match(query):
        return b"mysqldump"
    if b"/*" in query and _PT_CHECKSUM.search(query):
        return b"percona-toolkit"
    if query.startswith(_ADMIN):
        return query
    call = _CALL.match(query)
    if call:
        return call.group(1).lower()
    return None


def _cut_multi_row_insert(query: bytes) -> bytes:
    """``INSERT … VALUES (…), (…)`` -> the statement up to the first tuple."""
    if query[:6].upper() in (b"INSERT", b"REPLAC"):
        multi = _MULTI_INSERT.match(query)
        if multi:
            return multi.group(1)
    return query


def _drop_order_by_asc(query: bytes) -> bytes:
    """``1 while s/\\G(.+?)\\s+ASC/$1/gi`` after the first ORDER BY: a chain of matches."""
    order_by = _ORDER_BY.search(query)
    if not order_by:
        return query
    pos = order_by.end()
    kept = [query[:pos]]
    while True:
        asc = _ASC.match(query, pos)
        if not asc:
            break
        kept.append(asc.group(1))
        pos = asc.end()
    kept.append(query[pos:])
    return b"".join(kept)


def fingerprint_bytes(query: bytes) -> bytes:
    """The fingerprint of one query, exactly as pt-query-digest computes it."""
    special = _special_case(query)
    if special is not None:
        return special
    query = _cut_multi_row_insert(query)
    query = _MULTI_LINE_COMMENT.sub(b"", query)
    query = _ONE_LINE_COMMENT.sub(b"", query)
    query, used = (
        _USE.subn(b"use ?", query, count=1) if query[:4].lower() == b"use " else (query, 0)
    )
    if used:
        return query
    query = _ESCAPED_QUOTE.sub(b"", query)
    query = _DOUBLE_QUOTED.sub(b"?", query)
    query = _SINGLE_QUOTED.sub(b"?", query)
    query = _BOOLEAN.sub(b"?", query)
    query = _NUMBER.sub(b"?", query)
    query = _NUMBER_PREFIX.sub(b"?", query)
    query = _LEADING_SPACE.sub(b"", query)
    if query.endswith(b"\n"):  # chomp
        query = query[:-1]
    query = _SPACES.sub(b" ", query).lower()
    query = _NULL.sub(b"?", query)
    query = _IN_LIST.sub(rb"\1(?+)", query)
    query = _UNION.sub(rb"\1 /*repeat\2*/", query)
    query = _LIMIT.sub(b"limit ?", query, count=1)
    return _drop_order_by_asc(query)


def fingerprint(query: str | bytes) -> str:
    """The fingerprint of one statement as text (UTF-8; undecodable bytes as ``\\xNN``)."""
    raw = query.encode("utf-8", "surrogateescape") if isinstance(query, str) else query
    return decode(fingerprint_bytes(raw))


def decode(text: bytes) -> str:
    """How govern shows query bytes: UTF-8, other bytes escaped as ``\\xNN``."""
    return text.decode("utf-8", "backslashreplace")


def query_id(fingerprint_text: bytes | str) -> str:
    """pt-query-digest's query ID: the uppercase hex MD5 of the fingerprint (32 hex)."""
    raw = (
        fingerprint_text.encode("utf-8", "surrogateescape")
        if isinstance(fingerprint_text, str)
        else fingerprint_text
    )
    return hashlib.md5(raw, usedforsecurity=False).hexdigest().upper()


def short_id(id32: str) -> str:
    """The 16-hex form older pt versions and PMM use: the last 16 hex digits."""
    return id32[-16:]


# --- a cache key: queries that differ only in their digits share a fingerprint --------

_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")


def cache_key(query: bytes) -> bytes:
    """A key with ``fingerprint(a) == fingerprint(b)`` whenever ``cache_key(a) == cache_key(b)``.

    Every digit becomes ``0``: no step of the algorithm tells digits apart (each
    class that holds one digit holds all ten) and after the number step no digit
    is left. Where pt returns text early, that text decides: administrator
    commands and mysqldump's query are their own key, and a CALL is keyed by what
    pt keeps of it, behind a ``1`` (no other key holds a 1).
    """
    head = query[:1]
    if (head == b"a" and query.startswith(_ADMIN)) or (head == b"S" and _MYSQLDUMP.match(query)):
        return query
    if head in b"cC \t\r\n\x0b\x0c":
        call = _CALL.match(query)
        if call:
            return b"1" + call.group(1).lower()
    return query.translate(_DIGITS_TO_ZERO)


# --- the batch path: the same steps, once over NUL-joined queries --------------------
# Patterns are rewritten so they cannot cross a NUL, and so that they start with a
# character class (the regex engine then skips ahead in C instead of trying every
# position): ``\bnull\b`` becomes ``n(?<=\b.)ull\b``, which matches the same text.

_SEP = b"\x00"
_B_MULTI_LINE_COMMENT = re.compile(rb"/\*[^!\x00][^\x00]*?\*/")
_B_ONE_LINE_COMMENT = re.compile(rb"(?:--|#)[^'\"\r\n\x00]*(?=[\r\n\x00]|\Z)")
_B_DOUBLE_QUOTED = re.compile(rb'"[^\x00]*?"')
_B_SINGLE_QUOTED = re.compile(rb"'[^\x00]*?'")
# A shortcut, not a pt step: an IN or VALUES list of plain integers and quoted strings
# (already ``?``) ends as ``in(?+)`` whatever its length, so shrink it to ``in(0)``
# before the number pass has to replace every item. Equivalence argued in
# docs/design/digest-engines.md ("The fingerprint").
_B_LITERAL_LIST = re.compile(
    rb"([Ii](?<=\b.)[Nn]|[Vv](?<=\b.)[Aa][Ll][Uu][Ee][Ss]?)\s*\(\s*[0-9?][0-9?,\s]*\)"
)
_B_BOOLEAN = re.compile(rb"[FfTt](?<=\b.)(?:(?<=[Ff])[Aa][Ll][Ss][Ee]|(?<=[Tt])[Rr][Uu][Ee])\b")
_B_LEADING_SPACE = re.compile(rb"\x00\s+")
_B_CHOMP = re.compile(rb"\n(?=\x00|\Z)")
_B_SPACES = re.compile(rb"[\n\t\r\f][ \n\t\r\f]*| [ \n\t\r\f]+")
_B_NULL = re.compile(rb"n(?<=\b.)ull\b")
_B_IN_LIST = re.compile(rb"([iv](?<=\b.)(?:(?<=i)n|(?<=v)alues?))(?:[\s,]*\([\s?,]*\))+")


def _needs_reference(query: bytes) -> bool:
    """Queries the joined passes cannot treat: NUL inside, special cases, ``use``."""
    if _SEP in query or (b"/*" in query and _PT_CHECKSUM.search(query)):
        return True
    head = query[:1]
    if head in b"/-#":  # a leading comment may hide a `use db`
        return True
    return head in b"SaCcUu \t\r\n\x0b\x0c" and (
        _special_case(query) is not None or query[:4].lower() == b"use "
    )


def fingerprint_many(queries: Sequence[bytes]) -> list[bytes]:
    """Fingerprints of many queries; equal to ``[fingerprint_bytes(q) for q in queries]``."""
    results: list[bytes | None] = [None] * len(queries)
    batch: list[bytes] = []
    where: list[int] = []
    for index, query in enumerate(queries):
        if _needs_reference(query):
            results[index] = fingerprint_bytes(query)
        else:
            batch.append(_cut_multi_row_insert(query))
            where.append(index)
    if not batch:
        return results  # type: ignore[return-value]
    joined = _SEP.join(batch)
    if b"/*" in joined:
        joined = _B_MULTI_LINE_COMMENT.sub(b"", joined)
    if b"--" in joined or b"#" in joined:
        joined = _B_ONE_LINE_COMMENT.sub(b"", joined)
    if b"\\" in joined:
        joined = _ESCAPED_QUOTE.sub(b"", joined)
    if b'"' in joined:
        joined = _B_DOUBLE_QUOTED.sub(b"?", joined)
    if b"'" in joined:
        joined = _B_SINGLE_QUOTED.sub(b"?", joined)
    joined = _B_LITERAL_LIST.sub(rb"\1(0)", joined)
    joined = _B_BOOLEAN.sub(b"?", joined)
    joined = _NUMBER.sub(b"?", joined)
    joined = _NUMBER_PREFIX.sub(b"?", joined)
    joined = _LEADING_SPACE.sub(b"", joined)
    joined = _B_LEADING_SPACE.sub(_SEP, joined)
    joined = _B_CHOMP.sub(b"", joined)
    joined = _B_SPACES.sub(b" ", joined).lower()
    joined = _B_NULL.sub(b"?", joined)
    joined = _B_IN_LIST.sub(rb"\1(?+)", joined)
    for index, query in zip(where, joined.split(_SEP), strict=True):
        if b"union" in query:
            query = _UNION.sub(rb"\1 /*repeat\2*/", query)
        if b"limit ?" in query:
            query = _LIMIT.sub(b"limit ?", query, count=1)
        if b"order by " in query and b"asc" in query:
            query = _drop_order_by_asc(query)
        results[index] = query
    return results  # type: ignore[return-value]
