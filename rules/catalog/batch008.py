"""BATCH008: A run of single-row writes of one shape: a batch written one row at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern import units
from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.batching import BATCH_ROWS, run_floor, single_row_write
from govern.rules.evidence import ClassFacts, ceil_div, plural
from govern.rules.model import Finding, Need, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


class SingleRowRun(Rule):
    """A run of single-row writes of one shape: a batch written one row at a time.

    Consecutive INSERTs of one row into the same table (or UPDATEs/DELETEs of one
    row by key) each pay a round trip, a parse and, under autocommit, a commit and
    a binlog event. Rewrite them as multi-row INSERTs (… ON DUPLICATE KEY UPDATE for
    updates) of about 100 rows. In a file: fires once per run of at least
    ``min-run`` statements (default 20). On a digest: fires for a class of
    single-row writes that ran ``min-run`` times back to back on one connection
    (in a complete log), or ``min-calls`` times (default 1,000) in all; the
    finding gives calls, runs, connections and time, and estimates what batches
    of 100 rows would save from the per-statement overhead fitted over the same
    log's writes of that kind (the table's, else the whole log's).

    **Anti-pattern**

        -- config: {min-run = 3}
        INSERT INTO events (user_id, type) VALUES (1, 'view');
        INSERT INTO events (user_id, type) VALUES (2, 'view');
        INSERT INTO events (user_id, type) VALUES (3, 'click');

        -- a slow log: one connection inserts 50 rows one at a time
        -- events: {connection = 7, times = 50, query_time = 0.0004}
        INSERT INTO events (user_id, type) VALUES ({n}, 'view');
        -- events: {connection = 7, times = 4, query_time = 0.0009, rows = 3}
        INSERT INTO events (user_id, type) VALUES ({n}, 'view'), ({n}, 'buy'), ({n}, 'view');

    **Best practice**

        -- config: {min-run = 3}
        INSERT INTO events (user_id, type) VALUES (1, 'view'), (2, 'view'), (3, 'click');

        -- events: {connection = 7, times = 20, rows = 3}
        INSERT INTO events (user_id, type) VALUES ({n}, 'view'), ({n}, 'buy'), ({n}, 'view');
        -- single-row writes from separate requests, too few to matter
        -- events: {connection = 8}
        INSERT INTO events (user_id, type) VALUES (1, 'view');
        -- events: {connection = 9}
        INSERT INTO events (user_id, type) VALUES (2, 'view');
    """

    id = "BATCH008"
    name = "single-row-run"
    severity = Severity.WARNING
    needs = frozenset({Need.SQL, Need.SCRIPT})
    options = (
        Option("min-run", 20, "Shortest run of single-row writes to flag."),
        Option(
            "min-calls",
            1000,
            "Digests: calls of a single-row write class flagged even when not back to back.",
        ),
    )

    def script_checker(self, ctx: Context) -> _Runs:
        return _Runs(self, max(2, int(self.settings["min-run"])))

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        if ctx.digest is None:
            return set()
        return screen.calls_at_least(min(run_floor(self.settings), int(self.settings["min-calls"])))

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        """A digest class: its single-row writes, their runs on a connection and calls."""
        if statement.stats is None or ctx.digest is None:
            return
        facts = ClassFacts(statement.stats)
        if not facts.is_write:
            return
        single = facts.single_row_calls()
        runs_of = "single_runs"
        if single is None:  # the log has no row counts: judge the statement's shape
            if not single_row_write(statement):
                return
            single, runs_of = facts.calls, "runs"
        minimum = max(2, int(self.settings["min-run"]))
        runs, run_calls = (0, 0)
        if ctx.digest.full_log:
            runs, run_calls = facts.runs_of_at_least(minimum, runs_of)
        if not runs and single < int(self.settings["min-calls"]):
            return
        yield self._digest_finding(statement, ctx, facts, single, minimum, runs, run_calls)

    def _digest_finding(
        self,
        statement: Statement,
        ctx: Context,
        facts: ClassFacts,
        calls: int,
        minimum: int,
        runs: int,
        run_calls: int,
    ) -> Finding:
        assert ctx.digest is not None
        sequence = facts.sequence
        total = facts.query_time
        verb = statement.verb or facts.verb.upper()
        table = ", ".join(facts.tables_written) or "?"
        share = f" ({calls / facts.calls:.0%} of the class)" if calls < facts.calls else ""
        connections = int(sequence.get("connections") or 0)
        where = f"on {plural(connections, 'connection')}"
        single_runs = facts.doc.get("single_row_runs") or {}
        longest = int(single_runs.get("longest_run") or sequence.get("longest_run") or 0)
        if runs:
            what = (
                f"{run_calls:,} back to back in {plural(runs, 'run')} of {minimum}+ "
                f"(longest {longest:,}) {where}"
            )
        elif ctx.digest.full_log:
            what = f"{where}, never {minimum} in a row"
        else:
            what = f"{where} (runs unknown: {ctx.digest.full_log_reason})"
        after = ceil_div(calls, BATCH_ROWS)
        overhead = ctx.digest.overhead(facts)
        evidence: dict[str, object] = {
            "calls": calls,
            "class_calls": facts.calls,
            "runs": runs,
            "back_to_back_calls": run_calls,
            "min_run": minimum,
            "longest_run": longest,
            "connections": connections,
            "connections_exact": sequence.get("connections_exact"),
            "query_time": total,
            "batch_rows": BATCH_ROWS,
            "statements_batched": after,
            "per_statement": None,
            "per_row": None,
            "overhead_from": None,
            "overhead_statements": None,
            "estimated_saving": None,
        }
        if overhead is not None:
            typical = float((facts.metric("Query_time") or {}).get("median") or 0.0)
            saving = min(total, overhead.batched_saving(calls, typical, BATCH_ROWS))
            per_statement = min(overhead.per_statement, typical)
            estimate = (
                f"about {units.duration(saving, 'compact')} of its "
                f"{units.duration(total, 'compact')} (per-statement overhead "
                f"{units.duration(per_statement, 'compact')} of a "
                f"{units.duration(typical, 'compact')} median, fitted over "
                f"{overhead.statements:,} {overhead.scope})"
            )
            evidence |= {
                "per_statement": round(per_statement, 9),
                "per_row": round(overhead.per_row, 9),
                "overhead_from": overhead.scope,
                "overhead_statements": overhead.statements,
                "estimated_saving": round(saving, 6),
            }
        else:
            estimate = (
                f"an unknown share of its {units.duration(total, 'compact')} "
                "(no multi-row write of this kind in the log to fit the per-statement overhead on)"
            )
        return self.finding(
            statement,
            f"{calls:,} single-row {verb}s on {table}{share}, {what}: batches of {BATCH_ROWS} rows "
            f"would send {after:,} statement{'' if after == 1 else 's'} instead, saving "
            f"{estimate} and {calls - after:,} round trips",
            evidence=evidence,
        )

    @staticmethod
    def run_key(statement: Statement) -> object:
        """Equal for single-row writes that belong to one batch; None for anything else."""
        if not single_row_write(statement):
            return None
        if statement.verb in ("INSERT", "REPLACE") and statement.values_index is not None:
            # Same table and column list; values may differ in shape (NULL vs a number).
            return statement.shape[: statement.values_index]
        return statement.shape


class _Runs:
    """BATCH008's state in one file: the current run (its first and last statement)."""

    def __init__(self, rule: SingleRowRun, minimum: int) -> None:
        self.rule = rule
        self.minimum = minimum
        self.key: object = None
        self.first: Statement | None = None
        self.last: Statement | None = None
        self.count = 0

    def feed(self, statement: Statement) -> Iterator[Finding]:
        key = self.rule.run_key(statement)
        if key is not None and key == self.key:
            self.last = statement
            self.count += 1
            return
        yield from self.finish()
        self.key, self.first, self.last = key, statement, statement
        self.count = 1 if key is not None else 0

    def finish(self) -> Iterator[Finding]:
        if self.count < self.minimum or self.first is None or self.last is None:
            return
        first, last, count = self.first, self.last, self.count
        self.count = 0
        tables = first.tables
        table = tables[0].qualified if tables else "?"
        lines = f"lines {first.lines[0]}–{last.lines[1]}"
        batches = -(-count // 100)
        yield self.rule.finding(
            first,
            f"{count:,} single-row {first.verb}s on {table} in a row ({lines}): write them as "
            f"multi-row statements of about 100 rows ({batches:,} "
            f"statement{'' if batches == 1 else 's'} instead of {count:,})",
            evidence={
                "statements": count,
                "table": table,
                "first_line": first.lines[0],
                "last_line": last.lines[1],
            },
        )
