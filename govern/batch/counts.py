"""Exact inserted / updated / unchanged counts from one multi-row upsert.

The server reports two numbers for ``INSERT … ON DUPLICATE KEY UPDATE``:

* affected rows: 1 per inserted row, 2 per updated row, 0 per row that matched
  and was left as it was (1 when the client set CLIENT_FOUND_ROWS);
* for a statement of two or more rows, the info line
  ``Records: R  Duplicates: D  Warnings: W``, where D counts the rows that were
  updated (or, with CLIENT_FOUND_ROWS, every row that matched a duplicate key).

Two equations alone (rows = I + U + N, affected = I + 2U [+ N]) leave one
unknown; D closes the system, so the split is exact:

* without CLIENT_FOUND_ROWS: U = D, I = affected − 2D, N = rows − I − U;
* with it: I = rows − D, U = affected − rows, N = D − U.

A one-row statement has no info line but needs none: affected is 1, 2 or 0.
With CLIENT_FOUND_ROWS a one-row statement is ambiguous (1 = inserted or
unchanged), so the writer never sends one there (it pads it to two rows).
"""

from __future__ import annotations

import dataclasses
import re

_INFO = re.compile(rb"Records:\s*(\d+)\s+Duplicates:\s*(\d+)\s+Warnings:\s*(\d+)")


@dataclasses.dataclass
class BatchCounts:
    """What happened to the rows of one or more statements."""

    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    warnings: int = 0

    @property
    def rows(self) -> int:
        return self.inserted + self.updated + self.unchanged

    def add(self, other: BatchCounts) -> None:
        self.inserted += other.inserted
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.warnings += other.warnings


class CountsUnavailable(Exception):
    """The server's figures do not add up for this statement (a bug or an unknown server)."""


def parse_info(info: bytes | str | None) -> tuple[int, int, int] | None:
    """(records, duplicates, warnings) from the OK packet's info line, if it has one."""
    if not info:
        return None
    raw = info.encode() if isinstance(info, str) else info
    match = _INFO.search(raw)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def split_affected(
    rows: int,
    affected: int,
    info: bytes | str | None,
    *,
    found_rows: bool,
    warnings: int = 0,
    padding: int = 0,
) -> BatchCounts:
    """Split one statement's figures into counts; ``padding`` copies are taken off ``unchanged``.

    Padding rows are copies of the statement's last row, so on the server they
    are duplicates that change nothing.
    """
    parsed = parse_info(info)
    if parsed is None:
        if rows != 1 or (found_rows and affected == 1):
            raise CountsUnavailable(f"{rows} rows, {affected} affected, no info line")
        inserted, updated = int(affected == 1), int(affected == 2)
        unchanged = 1 - inserted - updated
    else:
        _records, duplicates, _ = parsed
        if found_rows:
            inserted = rows - duplicates
            updated = affected - rows
            unchanged = duplicates - updated
        else:
            updated = duplicates
            inserted = affected - 2 * duplicates
            unchanged = rows - inserted - updated
    counts = BatchCounts(inserted, updated, unchanged - padding, warnings)
    if min(counts.inserted, counts.updated, counts.unchanged) < 0:
        raise CountsUnavailable(f"{rows} rows, {affected} affected, info {info!r}")
    return counts
