"""BATCH005: VALUES(col) in ON DUPLICATE KEY UPDATE on MySQL 8.0.20+, where it is deprecated."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.catalog.batching import odku_calls, odku_reference
from govern.rules.model import Finding, Need, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class OdkuValuesDeprecated(Rule):
    """VALUES(col) in ON DUPLICATE KEY UPDATE on MySQL 8.0.20+, where it is deprecated.

    MySQL 8.0.20 deprecates the VALUES() function there (warning 1287) in favour of
    the row alias added in 8.0.19. MariaDB keeps VALUES() and has VALUE(); it has no
    row alias, so this only applies to MySQL targets.

    **Anti-pattern**

        -- target: mysql-8.0
        INSERT INTO stats (id, hits) VALUES (1, 10) ON DUPLICATE KEY UPDATE hits = VALUES(hits);

    **Best practice**

        -- target: mysql-8.0
        INSERT INTO stats (id, hits) VALUES (1, 10) AS new ON DUPLICATE KEY UPDATE hits = new.hits;

        -- target: mariadb-10.11
        INSERT INTO stats (id, hits) VALUES (1, 10) ON DUPLICATE KEY UPDATE hits = VALUES(hits);
    """

    id = "BATCH005"
    name = "odku-values-deprecated"
    severity = Severity.WARNING
    needs = frozenset({Need.SQL, Need.TARGET})

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        return set() if ctx.target is None else screen.containing(b"DUPLICATE")

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if ctx.target is None or not ctx.target.values_function_deprecated:
            return
        calls = odku_calls(statement, "VALUES")
        if calls:
            yield self.finding(
                statement,
                f"VALUES() in ON DUPLICATE KEY UPDATE is deprecated on "
                f"{ctx.target_label} (warning 1287): use {odku_reference(ctx)}",
                at=calls[0],
                evidence={"calls": len(calls)},
            )
