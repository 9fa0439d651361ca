"""BATCH010: An UPDATE or DELETE in a batch job whose WHERE bounds no key range and no LIMIT."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.batching import CHUNK_ADVICE, bounds_rows, top_level_index
from govern.rules.model import Finding, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class UnboundedBatchWrite(Rule):
    """An UPDATE or DELETE in a batch job whose WHERE bounds no key range and no LIMIT.

    A purge or backfill written as one statement (``DELETE FROM events WHERE created <
    NOW() - INTERVAL 90 DAY``) is one transaction however many rows match: it holds their
    locks to the end, and replicas apply it as one event, so they lag by its whole
    duration. Write it in chunks by primary-key range (``WHERE id >= ? AND id < ?``, or
    ``… ORDER BY id LIMIT 5000`` repeated), about 1,000–10,000 rows per transaction. Only
    files a config marks as batch jobs are checked (``[[lint.paths]] glob = "jobs/**"
    batch-job = true``): a migration's one-off UPDATE is not a nightly job. A WHERE bounds
    the rows with an equality or IN list on a ``key-columns`` column (default ``id``),
    BETWEEN, or a lower and an upper bound on one column.

    **Anti-pattern**

        -- batch-job
        DELETE FROM events WHERE created_at < NOW() - INTERVAL 90 DAY;

        -- batch-job
        UPDATE orders SET archived = 1;

    **Best practice**

        -- batch-job
        DELETE FROM events WHERE id >= 1000 AND id < 6000 AND created_at < NOW() - INTERVAL 90 DAY;

        -- batch-job
        DELETE FROM events WHERE created_at < NOW() - INTERVAL 90 DAY ORDER BY id LIMIT 5000;

        -- batch-job
        UPDATE orders SET archived = 1 WHERE id IN (1, 2, 3);

        DELETE FROM events WHERE created_at < NOW() - INTERVAL 90 DAY;
    """

    id = "BATCH010"
    name = "unbounded-batch-write"
    severity = Severity.WARNING
    options = (Option("key-columns", ["id"], "Columns whose equality or IN list bounds a write."),)

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int] | None:
        return None if ctx.batch_job else set()

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if not ctx.batch_job or statement.verb not in ("UPDATE", "DELETE"):
            return
        if top_level_index(statement, "LIMIT") is not None:
            return
        where = top_level_index(statement, "WHERE")
        keys = frozenset(str(k).lower() for k in self.settings["key-columns"])
        if where is not None and bounds_rows(statement, where + 1, keys):
            return
        tables = statement.tables
        table = tables[0].qualified if tables else "its table"
        why = "no WHERE" if where is None else "a WHERE that bounds no key range"
        yield self.finding(
            statement,
            f"{statement.verb} on {table} with {why} and no LIMIT in a batch job: one "
            f"transaction for every matching row, which replicas apply as one (lag); "
            f"{CHUNK_ADVICE}",
            at=where if where is not None else 0,
            evidence={"table": table, "where": where is not None},
        )
