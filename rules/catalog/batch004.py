"""BATCH004: Per-key IF()/CASE chains in ON DUPLICATE KEY UPDATE instead of the incoming row."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.catalog.batching import odku_reference
from govern.rules.model import Finding, Severity
from govern.rules.sql.lexer import NUMBER, OP, PARAM, QIDENT, STRING, WORD
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class OdkuIfChain(Rule):
    """Per-key IF()/CASE chains in ON DUPLICATE KEY UPDATE instead of the incoming row.

    A hand-written upsert that repeats every row's values in the update clause,
    keyed on the primary key (``c = IF(id = 1, 10, IF(id = 2, 20, c))``), grows
    quadratically with the batch, is evaluated per row, and silently keeps the old
    value for any key it forgot. The server already hands you the incoming row:
    VALUE(col) on MariaDB, the row alias on MySQL 8.0.19+, VALUES(col) before.

    **Anti-pattern**

        INSERT INTO stats (id, hits) VALUES (1, 10), (2, 20), (3, 30)
        ON DUPLICATE KEY UPDATE hits = IF(id = 1, 10, IF(id = 2, 20, IF(id = 3, 30, hits)));

        INSERT INTO stats (id, hits) VALUES (1, 10), (2, 20)
        ON DUPLICATE KEY UPDATE hits = CASE id WHEN 1 THEN 10 WHEN 2 THEN 20 ELSE hits END;

    **Best practice**

        INSERT INTO stats (id, hits) VALUES (1, 10), (2, 20), (3, 30)
        ON DUPLICATE KEY UPDATE hits = VALUE(hits);

        INSERT INTO stats (id, hits) VALUES (1, 10)
        ON DUPLICATE KEY UPDATE hits = IF(hits > 100, hits, VALUE(hits));
    """

    id = "BATCH004"
    name = "odku-if-chain"
    severity = Severity.WARNING

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        return screen.containing(b"DUPLICATE")

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        start = statement.odku_index
        if start is None:
            return
        tokens = statement.tokens
        depths = statement.depths
        base = depths[start]
        # Split the update list into assignments at top-level commas.
        assignments: list[tuple[int, int]] = []
        first = start + 4
        for index in range(first, len(tokens) + 1):
            if index == len(tokens) or (
                tokens[index].kind is OP and tokens[index].value == "," and depths[index] == base
            ):
                assignments.append((first, index))
                first = index + 1
        for begin, end in assignments:
            keyed = self._key_tests(statement, begin, end)
            if keyed >= 2:
                column = tokens[begin].value if begin < len(tokens) else "?"
                yield self.finding(
                    statement,
                    f"ON DUPLICATE KEY UPDATE {column.lower()} picks the value per key with "
                    f"{keyed} IF()/CASE tests: use {odku_reference(ctx)}",
                    at=begin,
                    evidence={"key_tests": keyed, "column": column.lower()},
                )

    @staticmethod
    def _key_tests(statement: Statement, begin: int, end: int) -> int:
        """IF(col = literal, …) calls and CASE … WHEN literal branches in one assignment."""
        tokens = statement.tokens
        literal = (STRING, NUMBER, PARAM)
        tests = 0
        for index in range(begin, end):
            token = tokens[index]
            if token.kind is not WORD:
                continue
            if token.value == "IF" and statement.is_call(index) and index + 4 < end:
                a, op, b = tokens[index + 2], tokens[index + 3], tokens[index + 4]
                if op.value == "=" and (
                    (a.kind in (WORD, QIDENT) and b.kind in literal)
                    or (a.kind in literal and b.kind in (WORD, QIDENT))
                ):
                    tests += 1
            elif token.value == "WHEN" and index + 1 < end:
                following = tokens[index + 1]
                after = tokens[index + 2] if index + 2 < end else None
                if (following.kind in literal and after is not None and after.value == "THEN") or (
                    following.kind in (WORD, QIDENT) and after is not None and after.value == "="
                ):
                    tests += 1
        return tests
