"""Rows as dicts or as sequences, turned into value tuples without holding the stream."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from govern.errors import UsageError

Row = Sequence[Any] | Mapping[str, Any]


def as_tuples(
    rows: Iterable[Row], columns: Sequence[str] | None
) -> tuple[tuple[str, ...], Iterator[Sequence[Any]]]:
    """(columns, value tuples). Dict rows name their columns (the first row's, unless given);
    sequence rows need ``columns``. Peeks at one row only, so any iterator works."""
    iterator = iter(rows)
    first = next(iterator, None)
    if first is None:
        return tuple(columns or ()), iter(())
    rest = itertools.chain([first], iterator)
    if isinstance(first, Mapping):
        names = tuple(columns) if columns is not None else tuple(first)
        return names, _from_dicts(rest, names)
    if columns is None:
        raise UsageError("columns: rows given as sequences need the column names")
    return tuple(columns), rest  # type: ignore[return-value]


def _from_dicts(rows: Iterable[Row], names: tuple[str, ...]) -> Iterator[tuple[Any, ...]]:
    wanted = set(names)
    for number, row in enumerate(rows, 1):
        if not isinstance(row, Mapping):
            raise UsageError(f"row {number}: a {type(row).__name__} among dict rows")
        if len(row) != len(names) or not wanted.issuperset(row):
            missing = sorted(wanted.difference(row))
            extra = sorted(set(row).difference(wanted))
            raise UsageError(
                f"row {number}: its keys differ from the columns"
                f" (missing {missing or 'none'}, extra {extra or 'none'})"
            )
        yield tuple(row[name] for name in names)
