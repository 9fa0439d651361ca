"""The text of the statements the batch writer sends: one place, so each form is easy to read.

Values are never in the text: each row is a ``(%s, …)`` group the driver binds.
The update clause takes the form the server prefers:

* MySQL 8.0.19+: a row alias, ``VALUES (…) AS new ON DUPLICATE KEY UPDATE c = new.c``;
* MariaDB 10.3+: ``c = VALUE(c)``;
* elsewhere: ``c = VALUES(c)`` (deprecated with a warning on MySQL 8.0.20+, hence the alias).

Never the hand-written ``c = IF(k = k1, v1, IF(k = k2, v2, …))`` chain: it binds every
value twice, the server evaluates it per row and per column, and it is easy to get wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from govern.batch.identifiers import quote
from govern.server import ServerInfo


class UpdateForm(StrEnum):
    ROW_ALIAS = "row_alias"
    VALUE = "value"
    VALUES = "values"


def update_form(server: ServerInfo) -> UpdateForm:
    """The form this server reads without a deprecation warning."""
    if server.row_alias:
        return UpdateForm.ROW_ALIAS
    if server.value_function:
        return UpdateForm.VALUE
    return UpdateForm.VALUES


def row_alias_name(table: str) -> str:
    """``new``, unless the table itself is called that."""
    return "new_row" if table.lower() == "new" else "new"


def insert_prefix(table: str, columns: Sequence[str]) -> str:
    """``INSERT INTO `s`.`t` (`a`, `b`) VALUES `` for an already quoted table name."""
    return f"INSERT INTO {table} ({', '.join(quote(c) for c in columns)}) VALUES "


def on_duplicate(
    form: UpdateForm, update: Sequence[str], *, noop_column: str, alias: str = "new"
) -> str:
    """The clause after the row groups.

    With no column to update, ``c = c`` on one column: a duplicate-safe insert
    that, unlike INSERT IGNORE, still fails on bad values instead of warning.
    """
    if not update:
        column = quote(noop_column)
        return f" ON DUPLICATE KEY UPDATE {column} = {column}"
    if form is UpdateForm.ROW_ALIAS:
        assignments = [f"{quote(c)} = {quote(alias)}.{quote(c)}" for c in update]
        return f" AS {quote(alias)} ON DUPLICATE KEY UPDATE {', '.join(assignments)}"
    function = "VALUE" if form is UpdateForm.VALUE else "VALUES"
    assignments = [f"{quote(c)} = {function}({quote(c)})" for c in update]
    return f" ON DUPLICATE KEY UPDATE {', '.join(assignments)}"


def multi_row(prefix: str, width: int, rows: int, suffix: str) -> str:
    """``prefix (%s, %s), (%s, %s) suffix``: ``rows`` groups of ``width`` placeholders."""
    group = "(" + ", ".join(["%s"] * width) + ")"
    return prefix + ", ".join([group] * rows) + suffix


def select_in(table: str, columns: Sequence[str], column: str, count: int) -> str:
    """``SELECT … FROM t WHERE c IN (%s, …)`` with ``count`` placeholders."""
    wanted = ", ".join(quote(c) for c in columns)
    placeholders = ", ".join(["%s"] * count)
    return f"SELECT {wanted} FROM {table} WHERE {quote(column)} IN ({placeholders})"
