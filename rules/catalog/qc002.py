"""QC002: SQL_CACHE or SQL_NO_CACHE anywhere but among the options of the outermost SELECT."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.model import Finding, Severity
from govern.rules.sql.statement import CACHE_HINTS, Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class SqlCachePlacement(Rule):
    """SQL_CACHE or SQL_NO_CACHE anywhere but among the options of the outermost SELECT.

    The cache stores whole statements, so the hint belongs right after the SELECT
    that starts the statement (after a WITH clause, or inside the parentheses of a
    first UNION branch, is fine). In a subquery, a derived table or a later UNION
    branch it is error 1234; SQL_CACHE with SQL_NO_CACHE is error 1221; a repeated
    hint is error 1225. In INSERT … SELECT or CREATE TABLE … SELECT it is accepted and
    does nothing: only SELECT statements are cached.

    **Anti-pattern**

        SELECT o.id FROM (SELECT SQL_CACHE id FROM orders) AS o;

        SELECT id FROM orders UNION SELECT SQL_CACHE id FROM archived_orders;

        SELECT SQL_CACHE SQL_NO_CACHE id FROM orders;

        INSERT INTO order_ids SELECT SQL_CACHE id FROM orders;

    **Best practice**

        SELECT SQL_CACHE o.id FROM (SELECT id FROM orders) AS o;

        (SELECT SQL_CACHE id FROM orders) UNION (SELECT id FROM archived_orders);
    """

    id = "QC002"
    name = "sql-cache-placement"
    severity = Severity.ERROR

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        return screen.containing(b"SQL_CACHE", b"SQL_NO_CACHE")

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if not (statement.words & CACHE_HINTS):
            return
        outer = statement.outer_select
        options_of: dict[int, int] = {}
        for select_index in statement.selects:
            for index in statement.select_option_indexes(select_index):
                options_of[index] = select_index
        seen: dict[int, list[str]] = {}
        for index in statement.word_indexes(*CACHE_HINTS):
            hint = statement.tokens[index].value
            select = options_of.get(index)
            if select is None:
                yield self.finding(
                    statement, f"{hint} is not a SELECT option here: a syntax error", at=index
                )
                continue
            previous = seen.setdefault(select, [])
            if previous:
                error = "error 1225 (repeated)" if hint in previous else "error 1221 (conflict)"
                yield self.finding(
                    statement,
                    f"{' and '.join([*previous, hint])} on one SELECT: {error}",
                    at=index,
                )
            previous.append(hint)
            if outer is None and statement.verb != "SELECT":
                yield self.finding(
                    statement,
                    f"{hint} in {statement.verb} … SELECT does nothing: only SELECT statements "
                    "are cached",
                    at=index,
                    severity=Severity.WARNING,
                )
            elif select != outer:
                yield self.finding(
                    statement,
                    f"{hint} in a subquery, derived table or later UNION branch: error 1234; "
                    "put it after the outermost SELECT",
                    at=index,
                )
