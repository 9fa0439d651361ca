"""META001: SQL that cannot be read: reported with its file:line:column, never a crash."""

from __future__ import annotations

from collections.abc import Iterator

from govern.rules.base import Context, Rule
from govern.rules.catalog.parsing import (
    PARSED_VERBS,
    SQLGLOT_GAPS,
    STATEMENT_WORDS,
    grammar_accepts,
    server_parsed,
    sqlglot_error,
)
from govern.rules.model import Finding, Severity
from govern.rules.sql.lexer import ERROR, OP, WORD
from govern.rules.sql.statement import Statement


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
        if statement.stats is not None and server_parsed(statement.stats):
            return  # a digest class that examined, sent or changed rows: the server read it
        if grammar_accepts(statement):
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
