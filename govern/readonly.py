"""Is a piece of SQL one read? Checked before govern sends SQL it was handed to run on its own
connection (a catalog's sizing query), so a mistake there cannot change the server.

A read-only transaction is not enough on its own: DDL commits it first (a ``DROP TABLE`` runs,
and is binlogged), and ``SET GLOBAL`` is no transaction's business. So the text itself must be
one ``SELECT``, ``WITH`` or ``SHOW`` statement. Comments and quoted text are read as the server
reads them (``/*! … */`` is code it executes), so neither can hide a second statement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

READS = ("SELECT", "WITH", "SHOW")
#: What a session govern hands a job on a replica runs first: its writes then fail
#: (error 1792, "Cannot execute statement in a READ ONLY transaction") even for an account
#: that read_only lets through (READ_ONLY ADMIN, SUPER); on MariaDB 10.11 CREATE and DROP
#: TABLE are refused too. It guards against mistakes: a job may still SET it back.
READ_ONLY_SESSION = "SET SESSION TRANSACTION READ ONLY"
#: Set to 1 in a job's environment when its worker is read-only: ``govern run`` (session
#: mode) then keeps the session read-only in the statement it puts in $GOVERN_INIT_COMMAND.
READ_ONLY_ENV = "GOVERN_SESSION_READ_ONLY"


def opted_out_by_govern_run(environ: Mapping[str, str]) -> bool:
    """Is this process a job of ``govern run`` in session mode (its sessions opt out of the
    slow log)? ``$GOVERN_INIT_COMMAND`` alone says so no longer: the scheduler sets it to
    :data:`READ_ONLY_SESSION` for every job on a replica."""
    statement = environ.get("GOVERN_INIT_COMMAND")
    return statement is not None and statement != READ_ONLY_SESSION


def read_only_assignment(mariadb: bool) -> str:
    """The same as :data:`READ_ONLY_SESSION`, as an assignment that joins another ``SET``
    (one statement: a client's init command may not run two)."""
    return "SESSION tx_read_only = ON" if mariadb else "SESSION transaction_read_only = ON"


_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9$]*")
_VERSIONED = re.compile(r"/\*[!M]!?\d{0,6}")
#: The main statement of a ``WITH`` that changes rows (MySQL 8 allows them).
_WRITES = frozenset({"DELETE", "UPDATE", "INSERT", "REPLACE"})


def read_problem(sql: str) -> str | None:
    """Why ``sql`` is not one read statement (``not DROP``, ``2 statements``…), or None."""
    statements = [part for part in _code(sql).split(";") if part.strip()]
    if len(statements) != 1:
        return f"{len(statements)} statements" if statements else "no statement"
    words = [word.upper() for word in _WORD.findall(statements[0])]
    first = words[0] if words else "a statement"
    if first not in READS:
        return f"not {first}"
    if "OUTFILE" in words or "DUMPFILE" in words:
        return "not SELECT … INTO OUTFILE (it writes a file on the server)"
    if first == "WITH" and _WRITES.intersection(words):
        return f"not WITH … {sorted(_WRITES.intersection(words))[0]}"
    return None


def _code(sql: str) -> str:
    """``sql`` as the server executes it: comments dropped (executable ``/*! … */`` kept as
    code), quoted strings and names blanked to ``''``."""
    out: list[str] = []
    at, end = 0, len(sql)
    while at < end:
        char = sql[at]
        if char in "'\"`":
            at = _after_quoted(sql, at)
            out.append("''")
        elif char == "#" or sql.startswith("-- ", at) or sql.startswith("--\n", at):
            newline = sql.find("\n", at)
            at = end if newline < 0 else newline
        elif sql.startswith("/*", at):
            versioned = _VERSIONED.match(sql, at)
            if versioned:  # the server runs what is inside: keep it, drop the markers
                at = versioned.end()
                continue
            close = sql.find("*/", at + 2)
            at = end if close < 0 else close + 2
            out.append(" ")
        elif sql.startswith("*/", at):  # the end of an executable comment
            at += 2
            out.append(" ")
        else:
            out.append(char)
            at += 1
    return "".join(out)


def _after_quoted(sql: str, at: int) -> int:
    """Where the quoted text starting at ``at`` ends (doubled quotes and backslashes read)."""
    quote = sql[at]
    at += 1
    while at < len(sql):
        if sql[at] == "\\" and quote != "`":
            at += 2
        elif sql[at] == quote:
            if sql.startswith(quote * 2, at):
                at += 2
            else:
                return at + 1
        else:
            at += 1
    return at
