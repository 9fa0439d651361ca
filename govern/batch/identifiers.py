"""Identifiers are checked and quoted here, never pasted into SQL as given.

Values are always bound (``%s``) by the driver; names cannot be, so every table
and column name govern writes into a statement passes through :func:`quote`.
"""

from __future__ import annotations

from govern.errors import UsageError

#: MySQL and MariaDB cap table and column names at 64 characters.
MAX_IDENTIFIER_LENGTH = 64


def check(name: str, what: str = "identifier") -> str:
    """Return ``name`` if the server could accept it as a quoted identifier, else UsageError."""
    if not isinstance(name, str) or not name:
        raise UsageError(f"{what}: an empty name")
    if len(name) > MAX_IDENTIFIER_LENGTH:
        raise UsageError(f"{what} {name!r}: longer than {MAX_IDENTIFIER_LENGTH} characters")
    if "\x00" in name:
        raise UsageError(f"{what} {name!r}: contains a NUL character")
    if name.endswith(" "):
        raise UsageError(f"{what} {name!r}: ends with a space, which the server refuses")
    return name


def quote(name: str) -> str:
    """`` `name` `` with embedded backticks doubled: safe for any checked name."""
    return "`" + check(name).replace("`", "``") + "`"


def split_table_name(name: str) -> tuple[str | None, str]:
    """``schema.table`` → (schema, table); ``table`` → (None, table).

    The first dot separates the schema, so a table whose own name has a dot
    needs its schema spelled out (``app.a.b`` is table ``a.b`` in ``app``).
    """
    schema, dot, table = name.partition(".")
    if not dot:
        return None, check(name, "table")
    return check(schema, "schema"), check(table, "table")
