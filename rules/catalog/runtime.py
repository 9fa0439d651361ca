"""Rules only runtime evidence supports: N+1 reads, and the query cache judged by traffic.

They read a digest class's statistics (``statement.stats``, the class's
``govern.digest`` document) and the digest-wide evidence (``ctx.digest``: tables'
changes, completeness), so they run in ``govern digest`` only. Their docstring
examples are workloads: ``-- events:`` lines make them slow logs
(rules/eventlog.py), which the tests digest and check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from govern import units
from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.qc import never_stored_reasons, sql_cache_index, unsafe_reasons
from govern.rules.evidence import ClassFacts, DigestEvidence, plural
from govern.rules.model import Finding, Need, Severity
from govern.rules.registry import register
from govern.rules.sql.statement import CACHE_HINTS, Statement

#: query_cache_limit's default: larger results are never stored.
QUERY_CACHE_LIMIT = 1024 * 1024


def short(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def point_read(statement: Statement, facts: ClassFacts) -> bool:
    """A SELECT of at most one row from one table by key, as the log measured it."""
    if statement.verb != "SELECT" or statement.outer_select is None:
        return False
    if len({t.qualified.lower() for t in statement.tables}) != 1 or "WHERE" not in statement.words:
        return False
    if statement.words & {"JOIN", "UNION", "GROUP", "HAVING"} or len(statement.selects) > 1:
        return False
    examined = facts.metric("Rows_examined")
    sent = facts.metric("Rows_sent")
    measured = examined if examined is not None else sent
    return measured is not None and float(measured["max"]) <= 1


@register
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


@dataclasses.dataclass(frozen=True)
class CacheEstimate:
    """What the query cache could do for a read class, from this digest's traffic.

    Each distinct text misses once, and again after each change of a table it
    reads; every other call can hit. So at least ``calls − texts × (changes + 1)``
    calls hit (ignoring evictions), which is also the expected figure when reads
    and changes are spread evenly over the window.
    """

    calls: int
    texts: int
    changes: int
    tables: list[str]
    window: float | None

    @property
    def hits(self) -> int:
        return max(0, self.calls - self.texts * (self.changes + 1))

    @property
    def ratio(self) -> float:
        return self.hits / self.calls if self.calls else 0.0

    def changed(self) -> str:
        tables = ", ".join(self.tables)
        span = f" in {units.duration(self.window, 'words')}" if self.window else ""
        return f"{tables} changed {plural(self.changes, 'time')}{span}"

    def to_json(self) -> dict[str, object]:
        return {
            "calls": self.calls,
            "distinct_texts": self.texts,
            "table_changes": self.changes,
            "tables": self.tables,
            "window_seconds": self.window,
            "estimated_hits": self.hits,
        }


def cache_estimate(facts: ClassFacts, evidence: DigestEvidence) -> CacheEstimate | None:
    texts = facts.distinct_texts
    if texts is None or not facts.tables_read:
        return None
    changes = sum(evidence.table(name).changing_writes for name in facts.tables_read)
    return CacheEstimate(facts.calls, texts, changes, facts.tables_read, evidence.window_seconds)


@register
class SqlCacheCandidate(Rule):
    """Frequent identical reads of rarely changed tables without SQL_CACHE: let the cache serve them.

    With query_cache_type=DEMAND (the policy govern assumes) only reads that carry
    SQL_CACHE are cached. A read class whose few distinct texts repeat thousands
    of times between the rare writes to its tables would be served from the cache
    almost every time. The digest gives the evidence: calls, distinct texts, and
    how often the tables changed (write statements that changed rows, from the
    DML classes of the same log). At least ``calls − texts × (changes + 1)`` calls
    would hit; the rule fires when that is ``min-hit-ratio`` (0.8) of ``min-calls``
    (1,000) or more calls. Not for servers without a query cache (MySQL 8.0), a
    class the cache already serves (QC_hit: Yes, query_cache_type=ON), results
    over query_cache_limit (1 MiB), or queries QC001/QC004 object to. Needs a log
    of every statement, or writes would be missing.

    **Anti-pattern**

        -- config: {min-calls = 100}
        -- events: {connection = 9}
        INSERT INTO daily_summary (day, shop, total) VALUES ('2025-01-05', 1, 100) ON DUPLICATE KEY UPDATE total = VALUE(total);
        -- events: {connection = 3, times = 300, rows = 30, query_time = 0.004, every = 10}
        SELECT day, shop, total FROM daily_summary WHERE day >= '2025-01-01';

    **Best practice**

        -- config: {min-calls = 100}
        -- events: {connection = 3, times = 300, rows = 30, every = 10}
        SELECT SQL_CACHE day, shop, total FROM daily_summary WHERE day >= '2025-01-01';

        -- config: {min-calls = 100}
        -- reads of a table that changes between them
        -- repeat: 150
        -- events: {connection = 3}
        SELECT status FROM orders WHERE id = 42;
        -- events: {connection = 4}
        UPDATE orders SET status = 'paid' WHERE id = {n};
        -- end
    """

    id = "QC006"
    name = "sql-cache-candidate"
    severity = Severity.INFO
    needs = frozenset({Need.SQL, Need.DIGEST, Need.FULL_LOG})
    options = (
        Option("min-calls", 1000, "Fewest calls of a read class worth caching."),
        Option("min-hit-ratio", 0.8, "Least share of calls the cache must be able to serve."),
    )

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if statement.stats is None or ctx.digest is None or statement.outer_select is None:
            return
        if ctx.target is not None and not ctx.target.has_query_cache:
            return
        if statement.words & CACHE_HINTS or statement.verb != "SELECT":
            return
        if unsafe_reasons(statement, ctx) or never_stored_reasons(statement, ctx):
            return
        facts = ClassFacts(statement.stats)
        if facts.calls < int(self.settings["min-calls"]):
            return
        hits = facts.flag("QC_hit", "QC_Hit")
        if hits is not None and hits[0]:
            return  # already served by the cache (query_cache_type=ON)
        sent = facts.metric("Bytes_sent")
        if sent is not None and float(sent["max"]) > self._limit(ctx):
            return
        estimate = cache_estimate(facts, ctx.digest)
        if estimate is None or estimate.ratio < float(self.settings["min-hit-ratio"]):
            return
        saved = min(facts.query_time, estimate.hits * facts.mean_time)
        yield self.finding(
            statement,
            f"{facts.calls:,} reads repeat {plural(estimate.texts, 'text')} while "
            f"{estimate.changed()}: the query cache would serve at least "
            f"{estimate.hits:,} ({estimate.ratio:.0%}), up to {units.duration(saved, 'compact')} of "
            f"{units.duration(facts.query_time, 'compact')}: add SQL_CACHE after SELECT "
            "(query_cache_type=DEMAND)",
            at=statement.outer_select,
            evidence=estimate.to_json() | {"query_time": facts.query_time, "saving": saved},
        )

    @staticmethod
    def _limit(ctx: Context) -> int:
        if ctx.target is not None:
            value = ctx.target.variables.get("query_cache_limit")
            if value and str(value).isdigit():
                return int(value)
        return QUERY_CACHE_LIMIT


@register
class SqlCacheIneffective(Rule):
    """SQL_CACHE on reads the cache seldom serves: tables that change often, texts that vary.

    A cached result lives until the next change of any table it reads. On a table
    under constant writes, or with texts that rarely repeat, almost every SQL_CACHE
    read misses, stores a result the next write throws away, and takes the cache's
    global lock twice. The evidence is the log's own QC_hit (MariaDB) or QC_Hit
    (Percona); without it, the estimate of QC006 from distinct texts and the
    tables' changes. Fires for ``min-calls`` (100) calls or more with a hit ratio
    under ``min-hit-ratio`` (0.5): remove SQL_CACHE (or stop the writes, if the
    table is meant to be a summary).

    **Anti-pattern**

        -- config: {min-calls = 100}
        -- repeat: 150
        -- events: {connection = 3}
        SELECT SQL_CACHE status FROM orders WHERE id = 42;
        -- events: {connection = 4}
        UPDATE orders SET status = 'paid' WHERE id = {n};
        -- end

    **Best practice**

        -- config: {min-calls = 100}
        -- events: {connection = 3}
        SELECT SQL_CACHE day, total FROM daily_summary WHERE day = '2025-01-05';
        -- events: {connection = 3, times = 149, qc_hit = true, query_time = 0.00002}
        SELECT SQL_CACHE day, total FROM daily_summary WHERE day = '2025-01-05';
    """

    id = "QC007"
    name = "sql-cache-ineffective"
    severity = Severity.WARNING
    needs = frozenset({Need.SQL, Need.DIGEST})
    options = (
        Option("min-calls", 100, "Fewest SQL_CACHE calls to judge."),
        Option("min-hit-ratio", 0.5, "Share of calls the cache must serve to be worth it."),
    )

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if statement.stats is None or ctx.digest is None:
            return
        at = sql_cache_index(statement)
        if at is None:
            return
        facts = ClassFacts(statement.stats)
        if facts.calls < int(self.settings["min-calls"]):
            return
        estimate = cache_estimate(facts, ctx.digest)
        flags = facts.flag("QC_hit", "QC_Hit")
        if flags is not None:
            hits, judged = flags
            basis = "measured"
        elif estimate is not None:
            hits, judged = estimate.hits, estimate.calls
            basis = "estimated (no QC_hit in this log)"
        else:
            return
        ratio = hits / judged if judged else 0.0
        if ratio >= float(self.settings["min-hit-ratio"]):
            return
        yield self.finding(
            statement,
            f"SQL_CACHE reads hit the cache {ratio:.0%} of {plural(judged, 'call')} "
            f"({basis}; {self._why(hits, estimate, ctx)}): remove SQL_CACHE, every miss "
            "stores a result the next change throws away",
            at=at,
            evidence={
                "hits": hits,
                "calls": judged,
                "hit_ratio": round(ratio, 4),
                "basis": "measured" if flags is not None else "estimated",
            }
            | ({} if estimate is None else {"estimate": estimate.to_json()}),
        )

    @staticmethod
    def _why(hits: int, estimate: CacheEstimate | None, ctx: Context) -> str:
        if estimate is None:
            return "tables or texts unknown"
        if estimate.changes * 2 >= estimate.calls:
            return estimate.changed()
        if estimate.texts * 2 >= estimate.calls:
            return f"{plural(estimate.texts, 'distinct text')}: the texts rarely repeat"
        if hits == 0:
            target = ctx.target_label if ctx.target is not None else "the server"
            return f"no hit at all: is the query cache on for {target}? (QC003 with a live server)"
        return (
            f"{estimate.changed()} and {plural(estimate.texts, 'distinct text')} would allow "
            f"{estimate.ratio:.0%}: results are evicted (query_cache_size too small?) or "
            "sessions run with the cache off"
        )
