"""Batching policy: multi-row writes of a sensible size, upserts written the server's way.

The house style is a multi-row ``INSERT … ON DUPLICATE KEY UPDATE`` of about 100
rows. Too few rows per statement pays a round trip, a parse and a commit per row;
too many runs into hard limits (65,535 placeholders, max_allowed_packet) and holds
locks long enough to delay replicas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from govern.rules.base import Context
from govern.rules.evidence import ClassFacts
from govern.rules.sql.lexer import OP, QIDENT, WORD
from govern.rules.sql.statement import Statement

MAX_PLACEHOLDERS = 65_535
#: Rows per statement the batching advice and its estimates assume.
BATCH_ROWS = 100
#: The smallest default max_allowed_packet of the servers govern knows (MySQL 5.7: 4 MiB).
CONSERVATIVE_PACKET = 4 * 1024 * 1024


def run_floor(settings: Mapping[str, Any]) -> int:
    """Fewest calls a class needs for a run of ``min-run`` (the run lengths' sketch is
    exact below 256, within 0.4% above): a bound for the digest screens."""
    minimum = max(2, int(settings["min-run"]))
    return minimum if minimum < 256 else int(minimum * 0.98)


def logged_max(statement: Statement, metric: str) -> int | None:
    """The largest value of ``metric`` a digest class logged (None for files)."""
    if statement.stats is None:
        return None
    found = ClassFacts(statement.stats).metric(metric)
    return int(found["max"]) if found else None


def odku_reference(ctx: Context) -> str:
    """How to refer to the incoming row in ON DUPLICATE KEY UPDATE on the target."""
    target = ctx.target
    if target is None:
        return (
            "VALUE(col) on MariaDB, new.col with a row alias on MySQL 8.0.19+, VALUES(col) before"
        )
    if target.row_alias:
        return "a row alias: INSERT … VALUES (…) AS new ON DUPLICATE KEY UPDATE c = new.c"
    if target.value_function:
        return "VALUE(col) (or VALUES(col))"
    return "VALUES(col)"


def odku_calls(statement: Statement, name: str) -> list[int]:
    start = statement.odku_index
    if start is None:
        return []
    return [i for i in statement.word_indexes(name) if i > start and statement.is_call(i)]


def single_row_write(statement: Statement) -> bool:
    """An INSERT/REPLACE of one row, or an UPDATE/DELETE that picks rows by equality only."""
    verb = statement.verb
    if verb in ("INSERT", "REPLACE"):
        return statement.row_count == 1
    if verb not in ("UPDATE", "DELETE"):
        return False
    words = statement.words
    if "WHERE" not in words or words & {"IN", "BETWEEN", "LIKE", "JOIN", "SELECT", "OR"}:
        return False
    where = next(statement.word_indexes("WHERE"))
    ops = [t.value for t in statement.tokens[where:] if t.kind is OP]
    if any(op in ("<", ">", "<=", ">=", "<>", "!=") for op in ops):
        return False
    limit = [i for i in statement.word_indexes("LIMIT")]
    if limit:
        following = statement.next_code(limit[0])
        return following is not None and following.value == "1"
    return "=" in ops


def single_row_read(statement: Statement) -> bool:
    """SELECT … INTO variables (one row by construction)."""
    return statement.verb == "SELECT" and any(
        statement.depths[i] == 0 for i in statement.word_indexes("INTO")
    )


def short(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def point_read(statement: Statement, facts: ClassFacts) -> bool:
    """A SELECT of at most one row from one table by key, as the log measured it."""
    if statement.verb != "SELECT" or statement.outer_select is None:
        return False
    if len({t.qualified.lower() for t in statement.tables}) != 1 or "WHERE" not in statement.words:
        return False
    if statement.words & {"JOIN", "UNION", "GROUP", "HAVING"} or len(statement.selects) > 1:
        return False
    examined = facts.metric("Rows_examined")
    sent = facts.metric("Rows_sent")
    measured = examined if examined is not None else sent
    return measured is not None and float(measured["max"]) <= 1


#: Rows per transaction the advice on big writes gives (replicas apply a transaction whole).
CHUNK_ADVICE = "chunk by primary-key range, about 1,000–10,000 rows per transaction"
_LOWER = frozenset({">", ">="})
_UPPER = frozenset({"<", "<="})
_CLAUSE_ENDS = frozenset({"ORDER", "LIMIT", "RETURNING", "GROUP", "HAVING", "UNION", "WINDOW"})


def top_level_index(statement: Statement, word: str, start: int = 0) -> int | None:
    """Index of ``word`` at the depth of token ``start`` (0 by default), at or after it."""
    tokens, depths = statement.tokens, statement.depths
    depth = depths[start] if start < len(depths) else 0
    for index in range(start, len(tokens)):
        if depths[index] < depth:
            return None
        token = tokens[index]
        if depths[index] == depth and token.kind is WORD and token.value == word:
            return index
    return None


def bounds_rows(statement: Statement, begin: int, key_columns: frozenset[str]) -> bool:
    """Does the condition from token ``begin`` (after WHERE) bound the rows it touches: a
    key equality or IN list, BETWEEN, or a lower and an upper bound on one column?"""
    tokens, depths = statement.tokens, statement.depths
    depth = depths[begin] if begin < len(tokens) else 0
    lower: set[str] = set()
    upper: set[str] = set()
    for index in range(begin, len(tokens)):
        token = tokens[index]
        if depths[index] < depth or (
            depths[index] == depth and token.kind is WORD and token.value in _CLAUSE_ENDS
        ):
            break
        if token.kind is WORD and token.value == "BETWEEN":
            return True
        if index == begin or tokens[index - 1].kind not in (WORD, QIDENT):
            continue
        column = tokens[index - 1].value.lower()
        if token.kind is OP and token.value in _LOWER:
            lower.add(column)
        elif token.kind is OP and token.value in _UPPER:
            upper.add(column)
        elif column in key_columns and (
            (token.kind is OP and token.value == "=")
            or (token.kind is WORD and token.value == "IN")
        ):
            return True
    return bool(lower & upper)
