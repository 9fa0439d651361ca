"""META001: SQL that cannot be read: reported with its file:line:column, never a crash."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.catalog.parsing import (
    PARSED_VERBS,
    SQLGLOT_GAPS,
    STATEMENT_WORDS,
    grammar_problem,
    server_parsed,
)
from govern.rules.model import Finding, Severity
from govern.rules.sql.lexer import ERROR, OP, WORD
from govern.rules.sql.statement import Statement

#: Deepest bracket nesting handed to sqlglot, a recursive parser (the server reads
#: 10,000 levels; sqlglot's recursion ends near 300). Deeper statements are not analysed.
MAX_DEPTH = 200


if TYPE_CHECKING:
    from govern.rules.screen import Screen


class ParseError(Rule):
    """SQL that cannot be read: reported with its file:line:column, never a crash.

    Errors are what the server itself rejects (docs/design/rules.md, "The server as the
    oracle"): an unterminated string, quoted identifier or comment (at the line where it
    opens); unbalanced brackets; a BEGIN without its END; an unknown statement keyword; a
    ``DELIMITER`` block whose closing delimiter never comes (reported once, with the line of
    the ``DELIMITER`` command). DML that govern's grammar (sqlglot) cannot follow is an
    ``info`` "not analysed", never an error: the server may well accept it, and the token
    rules have still run. Rules cannot judge what they cannot read, so fix errors first.

    **Anti-pattern**

        SELEC id FROM users WHERE id = 1;

        SELECT id FROM users WHERE (id = 1;

        SELECT id FROM users WHERE name = 'Ann;

    **Best practice**

        SELECT id FROM users WHERE id = 1;
    """

    id = "META001"
    name = "parse-error"
    severity = Severity.ERROR

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        return screen.not_plain_or_untouched()

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        problem = self._lexical(statement)
        if problem is not None:
            message, at, severity = problem
            yield self.finding(statement, message, at=at, severity=severity)
            return
        if statement.verb not in PARSED_VERBS or statement.words & SQLGLOT_GAPS:
            return
        if "NEXT" in statement.words and "VALUE" in statement.words:
            return  # NEXT VALUE FOR sequence
        if statement.stats is not None and server_parsed(statement.stats):
            return  # a digest class that examined, sent or changed rows: the server read it
        found = grammar_problem(statement)
        if found is not None:
            why, offset = found
            statement = statement.expanded()  # the token at the offset may be an IN list's
            at = next((i for i, t in enumerate(statement.tokens) if t.end > offset), 0)
            yield self.finding(
                statement,
                f"not analysed: govern's SQL grammar cannot follow this statement ({why}); "
                "the server may accept it",
                at=at,
                severity=Severity.INFO,
            )

    def _lexical(self, statement: Statement) -> tuple[str, int, Severity] | None:
        tokens = statement.tokens
        last = len(tokens) - 1
        if tokens and tokens[last].kind is ERROR:
            return tokens[last].value, last, self.level
        if statement.open_delimiter is not None:
            delimiter, line = statement.open_delimiter
            return (
                f"no {delimiter} ends this statement before the end of the file: the "
                f"DELIMITER {delimiter} of line {line} is still in force, so everything from "
                "here on is one statement",
                0,
                self.level,
            )
        first = tokens[0] if tokens else None
        if first is not None and first.kind is WORD and statement.routine is None:
            if first.value not in STATEMENT_WORDS:
                return f"unknown statement {first.value!r}", 0, self.level
        elif first is not None and first.kind is not WORD and first.value != "(":
            return f"a statement cannot start with {first.value!r}", 0, self.level
        opened: list[int] = []
        deepest = 0
        for index, token in enumerate(tokens):
            if token.kind is OP and token.value == "(":
                opened.append(index)
                deepest = max(deepest, len(opened))
            elif token.kind is OP and token.value == ")":
                if not opened:
                    return "')' without its '('", index, self.level
                opened.pop()
        if opened:
            return "this '(' is never closed", opened[-1], self.level
        if statement.unclosed_block:
            return "BEGIN without its END before the end of the file", 0, self.level
        if deepest > MAX_DEPTH:
            return (
                f"not analysed: brackets nested {deepest:,} deep (govern's SQL grammar stops "
                f"at {MAX_DEPTH}); the other rules have run",
                0,
                Severity.INFO,
            )
        return None
