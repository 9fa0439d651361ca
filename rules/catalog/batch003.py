"""BATCH003: More rows in one INSERT or REPLACE than the batch bound."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.batching import BATCH_ROWS, logged_max
from govern.rules.evidence import ClassFacts, plural
from govern.rules.model import Finding, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class RowsPerStatement(Rule):
    """More rows in one INSERT or REPLACE than the batch bound.

    Batches of about 100 rows take most of the gain of batching; much larger ones
    hold row locks and the binlog group longer and arrive at replicas as one long
    event that delays everything behind it. Bound: ``max-rows`` (default 1,000). On a
    digest the rows are the class's largest logged statement's (``Values_rows``).

    **Anti-pattern**

        -- config: {max-rows = 3}
        INSERT INTO daily_summary (day, cnt) VALUES ('2025-01-01', 1), ('2025-01-02', 2), ('2025-01-03', 3), ('2025-01-04', 4);

    **Best practice**

        -- config: {max-rows = 3}
        INSERT INTO daily_summary (day, cnt) VALUES ('2025-01-01', 1), ('2025-01-02', 2), ('2025-01-03', 3);
    """

    id = "BATCH003"
    name = "rows-per-statement"
    severity = Severity.WARNING
    options = (Option("max-rows", 1000, "Most rows one INSERT/REPLACE may carry."),)

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        bound = int(self.settings["max-rows"])  # a row is a "(" or more
        return screen.longer_than(bound) | screen.logged_above("Values_rows", bound)

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        bound = int(self.settings["max-rows"])
        rows = max(statement.row_count, logged_max(statement, "Values_rows") or 0)
        if rows <= bound:
            return
        evidence = {"rows": rows, "max_rows": bound}
        if statement.stats is None:
            yield self.finding(
                statement,
                f"{rows:,} rows in one {statement.verb}: above max-rows ({bound:,}); send "
                f"batches of about {BATCH_ROWS} rows",
                at=statement.values_index or 0,
                evidence=evidence,
            )
            return
        facts = ClassFacts(statement.stats)
        above = facts.count_above("Values_rows", bound)
        yield self.finding(
            statement,
            f"up to {rows:,} rows per {statement.verb or facts.verb.upper()}; {above:,} of "
            f"{plural(facts.calls, 'statement')} above max-rows ({bound:,}): send batches of "
            f"about {BATCH_ROWS} rows",
            at=statement.values_index or 0,
            evidence=evidence | {"calls": facts.calls, "statements_above": above},
        )
