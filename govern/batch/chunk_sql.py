"""``govern chunk``'s statement: one plain single-table UPDATE or DELETE, taken apart.

The statement is split on its own tokens (govern's SQL lexer), never regenerated:
the SET and WHERE texts the server sees are the user's, byte for byte. Anything
a range walk cannot keep the meaning of is refused with the reason: ORDER BY,
LIMIT, joins and several tables, aliases, modifiers (IGNORE…), RETURNING.
"""

from __future__ import annotations

import dataclasses

from govern.errors import UsageError

_REFUSED = {
    "ORDER": "ORDER BY (chunks go in key order)",
    "LIMIT": "LIMIT (the walk covers the whole key range)",
    "JOIN": "a join",
    "USING": "a multi-table DELETE",
    "RETURNING": "RETURNING",
    "PARTITION": "PARTITION",
    "IGNORE": "IGNORE",
    "LOW_PRIORITY": "LOW_PRIORITY",
    "QUICK": "QUICK",
}


@dataclasses.dataclass(frozen=True)
class ChunkStatement:
    action: str  # "delete" or "update"
    table: str  # schema.table or table, unquoted
    set: str | None
    where: str | None


def parse_statement(sql: str) -> ChunkStatement:
    """Take ``UPDATE t SET … [WHERE …]`` or ``DELETE FROM t [WHERE …]`` apart; UsageError
    naming what does not fit."""
    from govern.rules.sql.lexer import OP, WORD
    from govern.rules.sql.split import parse_script

    statements = [s for s in parse_script(sql).statements if s.tokens]
    if len(statements) != 1:
        raise UsageError(f"expected one UPDATE or DELETE statement, got {len(statements)}")
    st = statements[0]
    tokens, depths, text = st.tokens, st.depths, st.source.text
    verb = st.keyword
    if verb not in ("UPDATE", "DELETE"):
        raise UsageError(f"expected an UPDATE or DELETE statement, got {verb or sql[:20]!r}")
    top = [i for i in range(len(tokens)) if depths[i] == 0]
    for i in top:
        token = tokens[i]
        if token.kind is WORD and token.value in _REFUSED:
            raise UsageError(f"govern chunk cannot walk a statement with {_REFUSED[token.value]}")
    where_at = next((i for i in top if tokens[i].kind is WORD and tokens[i].value == "WHERE"), None)
    if verb == "DELETE":
        if len(tokens) < 3 or tokens[1].value != "FROM":
            raise UsageError("expected DELETE FROM table [WHERE …]")
        name = st.qualified_name(2)
        follows = "WHERE"
    else:
        name = st.qualified_name(1)
        follows = "SET"
    if name is None:
        raise UsageError(f"{verb}: expected a table name")
    schema, table, after = name
    if after < len(tokens) and tokens[after].value != follows:
        what = "several tables" if tokens[after].kind is OP else "a table alias"
        raise UsageError(f"govern chunk cannot walk a statement with {what}")
    set_text = None
    if verb == "UPDATE":
        if after >= len(tokens):
            raise UsageError("UPDATE: expected SET after the table")
        end = tokens[where_at].start if where_at is not None else st.end
        set_text = text[tokens[after].end : end].strip()
        if not set_text:
            raise UsageError("UPDATE: SET assigns nothing")
    where_text = text[tokens[where_at].end : st.end].strip() if where_at is not None else None
    if where_at is not None and not where_text:
        raise UsageError(f"{verb}: WHERE without a condition")
    return ChunkStatement(
        verb.lower(), f"{schema}.{table}" if schema else table, set_text, where_text
    )
