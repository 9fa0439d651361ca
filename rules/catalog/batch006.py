"""BATCH006: An upsert row alias (VALUES (…) AS new) on a server without one: a syntax error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.catalog.batching import odku_reference
from govern.rules.model import Finding, Need, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class OdkuSyntaxUnsupported(Rule):
    """An upsert row alias (VALUES (…) AS new) on a server without one: a syntax error.

    The row alias exists from MySQL 8.0.19 and in no MariaDB release (measured:
    error 1064 on MariaDB 10.11). Use VALUE(col) on MariaDB 10.3+, VALUES(col) on
    older servers.

    **Anti-pattern**

        -- target: mariadb-10.11
        INSERT INTO stats (id, hits) VALUES (1, 10) AS new ON DUPLICATE KEY UPDATE hits = new.hits;

        -- target: mysql-5.7
        INSERT INTO stats (id, hits) VALUES (1, 10) AS new ON DUPLICATE KEY UPDATE hits = new.hits;

    **Best practice**

        -- target: mariadb-10.11
        INSERT INTO stats (id, hits) VALUES (1, 10) ON DUPLICATE KEY UPDATE hits = VALUE(hits);
    """

    id = "BATCH006"
    name = "odku-syntax-unsupported"
    severity = Severity.ERROR
    needs = frozenset({Need.SQL, Need.TARGET})

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int] | None:
        return set() if ctx.target is None else None

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        target = ctx.target
        alias = statement.row_alias_index
        if target is None or alias is None or target.row_alias:
            return
        yield self.finding(
            statement,
            f"row alias AS … after VALUES is a syntax error on "
            f"{ctx.target_label}: use {odku_reference(ctx)}",
            at=alias,
        )
