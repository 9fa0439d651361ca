"""META rules: about the input and the suppressions rather than about SQL policy.

META001 checks every statement's lexical structure (strings, comments, brackets,
BEGIN … END, a known statement keyword) and the grammar of DML with sqlglot.
sqlglot only sees statements of a shape it has not seen before (literals
blanked), so a file of 10,000 INSERTs that differ in values is parsed once.
META002 and META003 are produced by the suppression pass (rules/suppress.py);
they are classes here so they can be documented, selected and ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from govern.rules.base import Context, Rule
from govern.rules.model import Finding, Severity
from govern.rules.registry import register
from govern.rules.sql.lexer import ERROR, OP, PARAM, WORD
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


def _server_parsed(stats: Mapping[str, Any]) -> bool:
    """Did some statement of a digest class touch a row? Then the server parsed the SQL
    (a statement it rejects examines, sends and changes nothing), and the grammar check,
    the costly part, can be skipped."""
    metrics = stats.get("metrics") or {}
    return any(
        (metrics.get(name) or {}).get("max")
        for name in ("Rows_examined", "Rows_sent", "Rows_affected")
    )


def _parses(text: str) -> bool:
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    try:
        sqlglot.parse(text, read="mysql")
    except (ParseError, TokenError):
        return False
    return True


def sqlglot_error(statement: Statement) -> tuple[str, int] | None:
    """(message, character offset in the source) of sqlglot's parse error, or None."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    text = _sqlglot_text(statement)
    try:
        sqlglot.parse(text, read="mysql")
    except ParseError as exc:
        detail = exc.errors[0] if exc.errors else {}
        description = str(detail.get("description") or "syntax error")
        line = int(detail.get("line") or 1)
        column = int(detail.get("col") or 1)
        offset = _offset(text, line, column) + statement.start
        near = str(detail.get("highlight") or "").strip()
        return (f"{description} near {near!r}" if near else description), offset
    except TokenError as exc:
        return str(exc).splitlines()[0], statement.start
    return None


def _offset(text: str, line: int, column: int) -> int:
    offset = 0
    for _ in range(line - 1):
        offset = text.index("\n", offset) + 1 if "\n" in text[offset:] else offset
    return max(offset + column - 1, 0)


@register
class ParseError(Rule):
    """SQL that cannot be read: reported with its file:line:column, never a crash.

    An unterminated string, quoted identifier or comment; unbalanced brackets; a
    BEGIN without its END; an unknown statement keyword; or DML that sqlglot's MySQL
    grammar rejects. Rules cannot judge what they cannot read, so fix these first.

    **Anti-pattern**

        SELEC id FROM users WHERE id = 1;

        SELECT id FROM users WHERE (id = 1;

        SELECT id FROM users WHERE id = ;

    **Best practice**

        SELECT id FROM users WHERE id = 1;
    """

    id = "META001"
    name = "parse-error"
    severity = Severity.ERROR

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        problem = self._lexical(statement)
        if problem is not None:
            message, at = problem
            yield self.finding(statement, message, at=at)
            return
        if statement.verb not in PARSED_VERBS or statement.words & SQLGLOT_GAPS:
            return
        if "NEXT" in statement.words and "VALUE" in statement.words:
            return  # NEXT VALUE FOR sequence
        if statement.stats is not None and _server_parsed(statement.stats):
            return  # a digest class that examined, sent or changed rows: the server read it
        key = normalized(statement)
        verdict = _verdicts.get(key)
        if verdict is None:
            if len(_verdicts) > _VERDICT_CACHE_SIZE:
                _verdicts.clear()
            verdict = _verdicts[key] = _parses(key)
        if verdict:
            return
        error = sqlglot_error(statement)  # the original text, for the exact position
        if error is not None:
            message, offset = error
            at = next((i for i, t in enumerate(statement.tokens) if t.end > offset), 0)
            yield self.finding(statement, f"cannot parse: {message}", at=at)

    @staticmethod
    def _lexical(statement: Statement) -> tuple[str, int] | None:
        tokens = statement.tokens
        last = len(tokens) - 1
        if tokens and tokens[last].kind is ERROR:
            return tokens[last].value, last
        first = tokens[0] if tokens else None
        if first is not None and first.kind is WORD and statement.routine is None:
            if first.value not in STATEMENT_WORDS:
                return f"unknown statement {first.value!r}", 0
        elif first is not None and first.kind is not WORD and first.value != "(":
            return f"a statement cannot start with {first.value!r}", 0
        depth = 0
        opened: list[int] = []
        for index, token in enumerate(tokens):
            if token.kind is OP and token.value == "(":
                depth += 1
                opened.append(index)
            elif token.kind is OP and token.value == ")":
                depth -= 1
                if depth < 0:
                    return "unbalanced ')'", index
                opened.pop()
        if opened:
            return "'(' is never closed", opened[-1]
        if statement.unclosed_block:
            return "BEGIN without its END before the end of the file", 0
        return None


@register
class BadSuppression(Rule):
    """A suppression comment that names no known rule or cannot be read.

    ``-- govern: ignore[QC002]`` silences QC002 on that statement; a typo in the ID
    or the syntax would silence nothing and hide that it does. Rule IDs are listed
    by ``govern rules``.

    **Anti-pattern**

        SELECT SQL_CACHE 1; -- govern: ignore[QC999]

        SELECT 1; -- govern: ignor[QC004]

    **Best practice**

        SELECT SQL_CACHE 1; -- govern: ignore[QC004]
    """

    id = "META002"
    name = "bad-suppression"
    severity = Severity.WARNING


@register
class UnusedSuppression(Rule):
    """A suppression comment that suppresses nothing: the finding it was for is gone.

    Remove it, or it will silence a future, unrelated finding. Only rules that ran
    count: a suppression of a rule that was not selected is not reported.

    **Anti-pattern**

        SELECT id FROM users; -- govern: ignore[QC001]

    **Best practice**

        SELECT SQL_CACHE 1; -- govern: ignore[QC004]
    """

    id = "META003"
    name = "unused-suppression"
    severity = Severity.WARNING
