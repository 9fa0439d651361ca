"""What META001 reads with: statement keywords and sqlglot's grammar verdict, cached by shape.

META001 checks every statement's lexical structure (strings, comments, brackets,
BEGIN … END, a known statement keyword) and the grammar of DML with sqlglot.
sqlglot only sees statements of a shape it has not seen before (literals
blanked), so a file of 10,000 INSERTs that differ in values is parsed once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from govern.rules.catalog import grammar_cache
from govern.rules.sql.lexer import PARAM, WORD
from govern.rules.sql.statement import CACHE_HINTS, Statement

#: First words of the statements MySQL and MariaDB accept (scripts and stored programs).
STATEMENT_WORDS = frozenset(
    [
        "ALTER",
        "ANALYZE",
        "BACKUP",
        "BEGIN",
        "BINLOG",
        "CACHE",
        "CALL",
        "CHANGE",
        "CHECK",
        "CHECKSUM",
        "CLOSE",
        "COMMIT",
        "CREATE",
        "DEALLOCATE",
        "DECLARE",
        "DELETE",
        "DESC",
        "DESCRIBE",
        "DO",
        "DROP",
        "EXECUTE",
        "EXPLAIN",
        "FETCH",
        "FLUSH",
        "GET",
        "GRANT",
        "HANDLER",
        "HELP",
        "IMPORT",
        "INSERT",
        "INSTALL",
        "ITERATE",
        "KILL",
        "LEAVE",
        "LOAD",
        "LOCK",
        "OPEN",
        "OPTIMIZE",
        "PREPARE",
        "PURGE",
        "RELEASE",
        "RENAME",
        "REPAIR",
        "REPLACE",
        "RESET",
        "RESIGNAL",
        "RESTART",
        "RETURN",
        "REVOKE",
        "ROLLBACK",
        "SAVEPOINT",
        "SELECT",
        "SET",
        "SHOW",
        "SHUTDOWN",
        "SIGNAL",
        "START",
        "STOP",
        "TABLE",
        "TRUNCATE",
        "UNINSTALL",
        "UNLOCK",
        "UPDATE",
        "USE",
        "VALUES",
        "WITH",
        "XA",
        "CLONE",
        # mysql client commands that scripts use
        "SOURCE",
        "CHARSET",
        "CONNECT",
        "SYSTEM",
        "TEE",
        "NOTEE",
        "WARNINGS",
        "NOWARNING",
        "PROMPT",
        "REHASH",
    ]
)
#: Verbs whose grammar sqlglot knows well enough to trust its verdict.
PARSED_VERBS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE"})
#: Valid MySQL/MariaDB that sqlglot 30 rejects: statements using these are not sent to it.
SQLGLOT_GAPS = frozenset({"OUTFILE", "DUMPFILE", "ANALYSE", "DELAYED", "SYSTEM_TIME", "PREVIOUS"})
_verdicts: dict[str, bool] = {}
_VERDICT_CACHE_SIZE = 50_000
# Grammar-preserving normalisation, all in C regexes: literals become '' or 0, identical
# rows of a VALUES list and the items of an IN (…) list collapse to one. The result is
# the cache key and, on a miss, what sqlglot parses: a 10,000-row INSERT costs one row.
_STRINGS = re.compile(r"'(?:[^'\\]++|\\.|'')*+'|\"(?:[^\"\\]++|\\.|\"\")*+\"")
_NUMBERS = re.compile(r"(?<![\w$.])(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?![\w$])")
_PLACEHOLDERS = re.compile(r"%\(\w+\)s|%s")
_SPACE = re.compile(r"\s+")
_LITERAL = r"(?:''|0|\?|NULL|-0)"
_ROWS = re.compile(
    r"(\(\s?" + _LITERAL + r"(?:\s?,\s?" + _LITERAL + r")*\s?\))(?:\s?,\s?\1)+", re.I
)
_IN_LIST = re.compile(r"\b(IN\s?\()(?:\s?" + _LITERAL + r"\s?,)+", re.I)


def normalized(statement: Statement) -> str:
    """The statement with literal values blanked and repeated rows collapsed."""
    text = _sqlglot_text(statement)
    text = _STRINGS.sub("''", text)
    text = _NUMBERS.sub("0", text)
    text = _PLACEHOLDERS.sub("?", text)
    text = _SPACE.sub(" ", text)
    text = _ROWS.sub(r"\1", text)
    return _IN_LIST.sub(r"\1", text)


def _sqlglot_text(statement: Statement) -> str:
    """The statement's text with SQL_CACHE hints and ``%s`` placeholders blanked, same length
    (sqlglot reads SQL_CACHE as a column and fails on ``%s``; offsets must not move)."""
    text = statement.text
    base = statement.start
    edits = [
        (t.start - base, t.end - base, "" if t.kind is WORD else "?")
        for t in statement.tokens
        if (t.kind is WORD and t.value in CACHE_HINTS) or (t.kind is PARAM and t.value[0] == "%")
    ]
    if not edits:
        return text
    parts = []
    last = 0
    for start, end, replacement in edits:
        parts.append(text[last:start])
        parts.append(replacement.ljust(end - start))
        last = end
    parts.append(text[last:])
    return "".join(parts)


def server_parsed(stats: Mapping[str, Any]) -> bool:
    """Did some statement of a digest class touch a row? Then the server parsed the SQL
    (a statement it rejects examines, sends and changes nothing), and the grammar check,
    the costly part, can be skipped."""
    metrics = stats.get("metrics") or {}
    return any(
        (metrics.get(name) or {}).get("max")
        for name in ("Rows_examined", "Rows_sent", "Rows_affected")
    )


def grammar_problem(statement: Statement) -> tuple[str, int] | None:
    """Why sqlglot cannot follow ``statement`` and where (see sqlglot_error); None if it can."""
    return None if grammar_accepts(statement) else sqlglot_error(statement)


def grammar_accepts(statement: Statement) -> bool:
    """sqlglot's verdict on the statement's normalised shape, cached by that shape, in
    memory and, for the shapes it accepts, across runs (grammar_cache.py: a run whose
    shapes are all known never imports sqlglot)."""
    key = normalized(statement)
    verdict = _verdicts.get(key)
    if verdict is None:
        if len(_verdicts) > _VERDICT_CACHE_SIZE:
            _verdicts.clear()
        verdict = grammar_cache.accepted_before(key)
        if not verdict:
            verdict = _parses(key)
            if verdict:
                grammar_cache.remember(key)
        _verdicts[key] = verdict
    return verdict


def _parses(text: str) -> bool:
    import logging

    import sqlglot

    # sqlglot logs "contains unsupported syntax" warnings of its own: the finding says it.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    from sqlglot.errors import ParseError, TokenError

    try:
        sqlglot.parse(text, read="mysql")
    except (ParseError, TokenError, RecursionError):
        return False
    return True


def sqlglot_error(statement: Statement) -> tuple[str, int] | None:
    """Where sqlglot stops reading the statement, in the user's words, and the character
    offset in the source; None if it reads it."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    text = _sqlglot_text(statement)
    try:
        sqlglot.parse(text, read="mysql")
    except ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        line = int(detail.get("line") or 1)
        column = int(detail.get("col") or 1)
        offset = _offset(text, line, column) + statement.start
        near = " ".join(str(detail.get("highlight") or "").split())
        return _in_words(str(detail.get("description") or ""), near), offset
    except TokenError:
        return "it cannot split the statement into words", statement.start
    except RecursionError:
        return "it is nested too deeply for the parser", statement.start
    return None


def _in_words(description: str, near: str) -> str:
    """sqlglot's description ("Required keyword: 'this' missing for <class …>", "Invalid
    expression / Unexpected token", "Expecting )") as what was expected where."""
    at = f" at {near!r}" if near else ""
    expecting = re.match(r"Expect(?:ing|ed) (.+?)(?: but got .*)?(?:\.|$)", description)
    if expecting and "<class" not in description:
        return f"it expected {expecting.group(1)}{at}"
    if description.startswith("Required keyword"):
        return f"an expression is incomplete{at}"
    return f"unexpected {near!r}" if near else "it does not know this construct"


def _offset(text: str, line: int, column: int) -> int:
    offset = 0
    for _ in range(line - 1):
        offset = text.index("\n", offset) + 1 if "\n" in text[offset:] else offset
    return max(offset + column - 1, 0)
