"""QC005: SQL_CACHE outside the allowlist of cacheable tables (and, with DEMAND, missing on them)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.query_cache import (
    has_no_cache,
    never_stored_reasons,
    sql_cache_index,
    unsafe_reasons,
)
from govern.rules.model import Finding, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class SqlCachePolicy(Rule):
    """SQL_CACHE outside the allowlist of cacheable tables (and, with DEMAND, missing on them).

    The policy behind query_cache_type=DEMAND: only reads of tables that change
    rarely and are read often (summary tables, say) carry SQL_CACHE, because every
    write to a table drops all its cached results. List them in ``tables`` (names
    or ``schema.name``, glob patterns); with ``demand = true`` a cacheable read of
    only allowlisted tables without SQL_CACHE is flagged too. Without ``tables`` the
    rule does nothing.

    **Anti-pattern**

        -- config: {tables = ["daily_summary", "*_summary"]}
        SELECT SQL_CACHE id, email FROM users WHERE id = 42;

        -- config: {tables = ["daily_summary"], demand = true}
        SELECT day, total FROM daily_summary WHERE day >= '2025-01-01';

    **Best practice**

        -- config: {tables = ["daily_summary"], demand = true}
        SELECT SQL_CACHE day, total FROM daily_summary WHERE day >= '2025-01-01';

        -- config: {tables = ["daily_summary"], demand = true}
        SELECT id, email FROM users WHERE id = 42;
    """

    id = "QC005"
    name = "sql-cache-policy"
    severity = Severity.WARNING
    options = (
        Option("tables", [], "Tables whose reads may carry SQL_CACHE (glob patterns)."),
        Option("demand", False, "Also flag cacheable reads of those tables without SQL_CACHE."),
    )

    def _allowed(self, schema: str | None, name: str) -> bool:
        candidates = [name.lower()] + ([f"{schema}.{name}".lower()] if schema else [])
        return any(
            fnmatch.fnmatchcase(candidate, pattern.lower())
            for pattern in self.settings["tables"]
            for candidate in candidates
        )

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int] | None:
        return None if self.settings["tables"] else set()

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if not self.settings["tables"] or statement.outer_select is None or has_no_cache(ctx):
            return
        tables = statement.tables
        at = sql_cache_index(statement)
        if at is not None:
            others = [t.qualified for t in tables if not self._allowed(t.schema, t.name)]
            if others:
                yield self.finding(
                    statement,
                    f"SQL_CACHE on a read of {', '.join(others)}: only allowlisted tables may "
                    "be cached (every write to a table drops its cached results)",
                    at=at,
                    evidence={"tables": others, "allowlist": list(self.settings["tables"])},
                )
            return
        if not self.settings["demand"] or not tables or "SQL_NO_CACHE" in statement.words:
            return
        if not all(self._allowed(t.schema, t.name) for t in tables):
            return
        if unsafe_reasons(statement, ctx) or never_stored_reasons(statement, ctx):
            return
        names = ", ".join(dict.fromkeys(t.qualified for t in tables))
        yield self.finding(
            statement,
            f"read of allowlisted {names} without SQL_CACHE: with query_cache_type=DEMAND "
            "only SQL_CACHE reads are cached",
            at=statement.outer_select,
            evidence={"tables": [t.qualified for t in tables]},
        )
