"""BATCH001: More placeholders in one statement than a prepared statement may take."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.batching import MAX_PLACEHOLDERS
from govern.rules.model import Finding, Severity
from govern.rules.sql.lexer import PARAM
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class PlaceholderLimit(Rule):
    """More placeholders in one statement than a prepared statement may take.

    A prepared statement takes at most 65,535 parameters (error 1390), so a
    multi-row INSERT of N columns takes at most 65,535 // N rows: split the batch.
    ``limit`` lowers the bound for drivers or proxies with a smaller one.

    **Anti-pattern**

        -- config: {limit = 4}
        INSERT INTO events (user_id, type, amount) VALUES (?, ?, ?), (?, ?, ?);

    **Best practice**

        INSERT INTO events (user_id, type, amount) VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?);
    """

    id = "BATCH001"
    name = "placeholder-limit"
    severity = Severity.ERROR
    options = (Option("limit", MAX_PLACEHOLDERS, "Most placeholders per statement."),)

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        return screen.longer_than(int(self.settings["limit"]))  # a placeholder is a byte or more

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        count = statement.placeholder_count
        limit = int(self.settings["limit"])
        if count <= limit:
            return
        spans = statement.row_spans
        columns = (
            sum(1 for t in statement.tokens[spans[0][0] : spans[0][1]] if t.kind is PARAM)
            if spans
            else 0
        )
        advice = f"; at {columns} per row send at most {limit // columns:,} rows" if columns else ""
        yield self.finding(
            statement,
            f"{count:,} placeholders: a prepared statement takes at most {limit:,} "
            f"(error 1390 above {MAX_PLACEHOLDERS:,}){advice}",
            evidence={"placeholders": count, "columns_per_row": columns, "rows": len(spans)},
        )
