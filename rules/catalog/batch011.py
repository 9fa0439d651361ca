"""BATCH011: INSERT … SELECT in a batch job that reads a whole table in one statement."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.catalog.batching import CHUNK_ADVICE, top_level_index
from govern.rules.model import Finding, Severity
from govern.rules.sql.lexer import WORD
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class InsertSelectWholeTable(Rule):
    """INSERT … SELECT in a batch job that reads a whole table in one statement.

    Copying a table (``INSERT INTO orders_new SELECT * FROM orders``) is one transaction:
    under REPEATABLE READ with statement-based or mixed binlogs it locks every row it reads
    in the source table, and replicas apply the whole copy as one event, lagging by its
    full duration. Copy in primary-key ranges instead (``… WHERE id >= ? AND id < ?``),
    about 1,000–10,000 rows per transaction. A SELECT with a WHERE or a LIMIT is taken as
    already bounded. As BATCH010, only files a config marks as batch jobs are checked
    (``[[lint.paths]] … batch-job = true``): a migration's one-off copy is not a nightly job.

    **Anti-pattern**

        -- batch-job
        INSERT INTO orders_archive SELECT * FROM orders;

        -- batch-job
        INSERT INTO daily_totals (day, total) SELECT DATE(created_at), SUM(amount) FROM orders GROUP BY DATE(created_at);

    **Best practice**

        -- batch-job
        INSERT INTO orders_archive SELECT * FROM orders WHERE id >= 1 AND id < 5001;

        -- batch-job
        INSERT INTO settings (name, value) SELECT 'mode', 'on';

        INSERT INTO orders_archive SELECT * FROM orders;
    """

    id = "BATCH011"
    name = "insert-select-whole-table"
    severity = Severity.WARNING

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int] | None:
        return None if ctx.batch_job else set()

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if not ctx.batch_job or statement.verb not in ("INSERT", "REPLACE"):
            return
        if statement.values_index is not None:
            return
        select = next(
            (
                i
                for i, t in enumerate(statement.tokens)
                if t.kind is WORD and t.value == "SELECT" and statement.depths[i] <= 1
            ),
            None,
        )
        if select is None:
            return
        source = top_level_index(statement, "FROM", select)
        if source is None:
            return  # INSERT … SELECT of constants
        if any(top_level_index(statement, w, select) is not None for w in ("WHERE", "LIMIT")):
            return
        tables = [t for t in statement.tables if t.index > select]
        table = tables[0].qualified if tables else "its source"
        yield self.finding(
            statement,
            f"{statement.verb} … SELECT reads all of {table} in one statement: one transaction "
            f"that locks the rows it reads and that replicas apply as one (lag); {CHUNK_ADVICE}",
            at=select,
            evidence={"table": table},
        )
