"""QC004: SQL_CACHE on a query the cache never stores: the hint does nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.catalog.query_cache import has_no_cache, never_stored_reasons, sql_cache_index
from govern.rules.model import Finding, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class SqlCacheNeverStored(Rule):
    """SQL_CACHE on a query the cache never stores: the hint does nothing.

    No table (or only DUAL), a system schema (mysql, information_schema,
    performance_schema, sys), a temporary table created in the same file, or a
    sequence (NEXTVAL(), NEXT VALUE FOR): measured on MariaDB 10.11, each run counts
    in Qcache_not_cached and never hits.

    **Anti-pattern**

        SELECT SQL_CACHE 1;

        SELECT SQL_CACHE table_name FROM information_schema.tables;

        CREATE TEMPORARY TABLE tmp_ids (id INT PRIMARY KEY);
        SELECT SQL_CACHE COUNT(*) FROM tmp_ids;

    **Best practice**

        SELECT table_name FROM information_schema.tables;

        SELECT SQL_CACHE COUNT(*) FROM daily_summary;
    """

    id = "QC004"
    name = "sql-cache-never-stored"
    severity = Severity.WARNING

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        return screen.containing(b"SQL_CACHE")

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        at = sql_cache_index(statement)
        if at is None or has_no_cache(ctx):
            return
        reasons = never_stored_reasons(statement, ctx)
        if reasons:
            yield self.finding(
                statement,
                f"SQL_CACHE on a query the cache never stores ({', '.join(reasons)})",
                at=at,
                evidence={"reasons": reasons},
            )
