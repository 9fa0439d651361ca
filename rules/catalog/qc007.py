"""QC007: SQL_CACHE on reads the cache seldom serves: tables that change often, texts that vary."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.query_cache import CacheEstimate, cache_estimate, sql_cache_index
from govern.rules.evidence import ClassFacts, plural
from govern.rules.model import Finding, Need, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


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

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        called = screen.calls_at_least(int(self.settings["min-calls"]))
        return called & screen.containing(b"SQL_CACHE")

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
