"""QC001: SQL_CACHE on a query whose result depends on more than its tables' data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.catalog.query_cache import has_no_cache, sql_cache_index, unsafe_reasons
from govern.rules.model import Finding, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class SqlCacheUnsafe(Rule):
    """SQL_CACHE on a query whose result depends on more than its tables' data.

    NOW(), RAND(), UUID(), user variables, stored functions, locking reads (FOR
    UPDATE, LOCK IN SHARE MODE) and SELECT … INTO make a result the cache must not
    serve twice. MySQL never caches such a query, so SQL_CACHE is dead weight. MariaDB
    (measured on 10.11) honours the explicit SQL_CACHE anyway: the next identical
    query gets the stored result, so NOW() stands still, UUID() repeats, the result
    for the first value of @uid is returned for every value, FOR UPDATE takes no lock
    and INTO neither assigns the variables nor writes the file.

    **Anti-pattern**

        SELECT SQL_CACHE id, status FROM orders WHERE created_at > NOW() - INTERVAL 1 DAY;

        SELECT SQL_CACHE name FROM users WHERE id = @uid;

        SELECT SQL_CACHE balance FROM accounts WHERE id = 7 FOR UPDATE;

    **Best practice**

        SELECT id, status FROM orders WHERE created_at > NOW() - INTERVAL 1 DAY;

        SELECT SQL_CACHE day, total FROM daily_summary WHERE day = '2025-01-01';
    """

    id = "QC001"
    name = "sql-cache-unsafe"
    severity = Severity.ERROR

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        return screen.containing(b"SQL_CACHE")

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        at = sql_cache_index(statement)
        if at is None or has_no_cache(ctx):
            return
        reasons = unsafe_reasons(statement, ctx)
        if not reasons:
            return
        target = ctx.target
        if target is not None and target.is_mariadb:
            effect = "MariaDB stores it anyway and serves that result to the next identical query"
        elif target is not None:
            effect = "MySQL never caches it: SQL_CACHE does nothing here"
        else:
            effect = (
                "MySQL never caches it; MariaDB stores it anyway and serves a stale result "
                "to the next identical query"
            )
        yield self.finding(
            statement,
            f"SQL_CACHE on a query the cache must not serve ({', '.join(reasons)}): {effect}",
            at=at,
            evidence={"reasons": reasons},
        )
