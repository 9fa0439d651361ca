"""BATCH009: Point lookups repeated back to back on a connection after another query: N+1 reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern import units
from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.batching import point_read, run_floor, short
from govern.rules.evidence import ClassFacts, plural
from govern.rules.model import Finding, Need, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class NPlusOneReads(Rule):
    """Point lookups repeated back to back on a connection after another query: N+1 reads.

    The application reads a list (order lines), then fetches each row's parent or
    detail by key, one statement per key. Every lookup pays a round trip, a parse
    and a table open for one row. Read the keys of each run with one
    ``WHERE id IN (…)`` (govern.batch.select_in does it 1,000 keys a statement) or
    join them into the query that produced them. Fires for a SELECT of one table
    by key (the log shows at most one row examined per call) that ran in runs of
    ``min-run`` (10) or more back to back on a connection, ``min-calls`` (100)
    calls in such runs in all; the finding names the classes that ran just before
    the runs. Needs a log of every statement: the runs of a cut log are not real.

    **Anti-pattern**

        -- for each of 20 orders: its lines, then each line's product by key
        -- repeat: 20
        -- events: {connection = 3, rows = 12, examined = 12}
        SELECT id, product_id FROM order_lines WHERE order_id = {n};
        -- events: {connection = 3, times = 12}
        SELECT id, name, price FROM products WHERE id = {n};
        -- end

    **Best practice**

        -- repeat: 20
        -- events: {connection = 3, rows = 12, examined = 12}
        SELECT id, product_id FROM order_lines WHERE order_id = {n};
        -- events: {connection = 3, rows = 12, examined = 12}
        SELECT id, name, price FROM products WHERE id IN ({n}, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12);
        -- end

        -- a lookup per request: never repeated back to back
        -- repeat: 150
        -- events: {connection = 3}
        SELECT id, name FROM users WHERE id = {n};
        -- events: {connection = 3, rows = 5, examined = 5}
        SELECT id, total FROM orders WHERE user_id = {n};
        -- end
    """

    id = "BATCH009"
    name = "n-plus-one-reads"
    severity = Severity.WARNING
    needs = frozenset({Need.SQL, Need.DIGEST, Need.FULL_LOG})
    options = (
        Option("min-run", 10, "Shortest run of back-to-back lookups that counts as a loop."),
        Option("min-calls", 100, "Calls in such runs, over the log, before the rule fires."),
    )

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        if ctx.digest is None:
            return set()
        return screen.calls_at_least(run_floor(self.settings))

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if statement.stats is None or ctx.digest is None:
            return
        facts = ClassFacts(statement.stats)
        if not point_read(statement, facts):
            return
        minimum = max(2, int(self.settings["min-run"]))
        runs, calls = facts.runs_of_at_least(minimum)
        if not runs or calls < int(self.settings["min-calls"]):
            return
        sequence = facts.sequence
        table = statement.tables[0].qualified
        leads = list(sequence.get("leads") or [])
        after = ""
        if leads:
            lead = leads[0]
            text = ctx.digest.fingerprint_of(lead["id"])
            shown = f"`{short(text)}`" if text else f"class {lead['id'][-16:]}"
            after = f", mostly after {shown} ({plural(int(lead['runs']), 'run')})"
        connections = int(sequence.get("connections") or 0)
        yield self.finding(
            statement,
            f"{calls:,} of {plural(facts.calls, 'lookup')} on {table} ran back to back in "
            f"{plural(runs, 'run')} of {minimum}+ (mean {calls / runs:.0f}, longest "
            f"{int(sequence.get('longest_run') or 0):,}) on "
            f"{plural(connections, 'connection')}{after}: read each run's keys with one "
            f"IN() or join them into that query ({runs:,} statements instead of {calls:,}); "
            f"{units.duration(facts.query_time, 'compact')} in all",
            evidence={
                "calls": facts.calls,
                "runs": runs,
                "calls_in_runs": calls,
                "min_run": minimum,
                "longest_run": sequence.get("longest_run"),
                "connections": connections,
                "query_time": facts.query_time,
                "leads": leads,
                "table": table,
            },
        )
