"""QC003: Query-cache syntax or settings for a server that has no query cache (or has it off)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.catalog.query_cache import sql_cache_index
from govern.rules.model import Finding, Need, Severity
from govern.rules.sql.lexer import SYSVAR, WORD
from govern.rules.sql.statement import CACHE_HINTS, Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class QueryCacheUnavailable(Rule):
    """Query-cache syntax or settings for a server that has no query cache (or has it off).

    MySQL removed the query cache in 8.0.3: SQL_CACHE is then a syntax error (or is
    read as a column name), ``query_cache_*`` variables are unknown and FLUSH/RESET
    QUERY CACHE fail; a ``query_cache_size`` line in my.cnf stops 8.0 from starting.
    SQL_NO_CACHE is accepted, ignored and warns. Read from a live server, a MariaDB
    whose ``query_cache_type`` is OFF or ``query_cache_size`` is 0 ignores SQL_CACHE.

    **Anti-pattern**

        -- target: mysql-8.0
        SELECT SQL_CACHE day, total FROM daily_summary;

        -- target: mysql-8.0
        SET GLOBAL query_cache_type = DEMAND;

    **Best practice**

        -- target: mysql-8.0
        SELECT day, total FROM daily_summary;

        -- target: mariadb-10.11
        SELECT SQL_CACHE day, total FROM daily_summary;
    """

    id = "QC003"
    name = "query-cache-unavailable"
    severity = Severity.ERROR
    needs = frozenset({Need.SQL, Need.TARGET})

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        if ctx.target is None:
            return set()
        return screen.containing(b"SQL_CACHE", b"SQL_NO_CACHE", b"QUERY")

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        target = ctx.target
        if target is None:
            return
        words = statement.words
        if not target.has_query_cache:
            yield from self._removed(statement, ctx.target_label)
            return
        kind = (target.query_cache_type or "").upper()
        size = target.variables.get("query_cache_size")
        off = kind in ("OFF", "0") or size == "0"
        at = sql_cache_index(statement)
        if off and at is not None and "SQL_CACHE" in words:
            yield self.finding(
                statement,
                f"SQL_CACHE is ignored: this server's query cache is off "
                f"(query_cache_type={kind or '?'}, query_cache_size={size or '?'})",
                at=at,
                severity=Severity.WARNING,
            )

    def _removed(self, statement: Statement, target: str) -> Iterator[Finding]:
        words = statement.words
        tokens = statement.tokens
        for index in statement.word_indexes(*CACHE_HINTS):
            hint = tokens[index].value
            if hint == "SQL_CACHE":
                message = f"SQL_CACHE on {target}, which has no query cache: a syntax error"
                yield self.finding(statement, message, at=index)
            else:
                message = f"SQL_NO_CACHE on {target}: accepted, ignored, and warns"
                yield self.finding(statement, message, at=index, severity=Severity.INFO)
        if "QUERY" in words and "CACHE" in words and statement.keyword in ("FLUSH", "RESET"):
            message = f"{statement.keyword} QUERY CACHE on {target}, which has no query cache"
            yield self.finding(statement, message)
        for index, token in enumerate(tokens):
            name = token.value.lower()
            if token.kind is SYSVAR and "query_cache" in name:
                message = f"{token.value} does not exist on {target}"
                yield self.finding(statement, message, at=index)
            elif (
                token.kind is WORD
                and name.startswith("query_cache_")
                and statement.keyword == "SET"
                and (index + 1 < len(tokens) and tokens[index + 1].value in ("=", ":="))
            ):
                message = f"{name} does not exist on {target} (unknown system variable)"
                yield self.finding(statement, message, at=index)
