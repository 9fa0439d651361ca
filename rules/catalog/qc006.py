"""QC006: Frequent identical reads of rarely changed tables without SQL_CACHE: let the cache serve them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern import units
from govern.rules.base import Context, Option, Rule
from govern.rules.catalog.query_cache import (
    QUERY_CACHE_LIMIT,
    cache_estimate,
    never_stored_reasons,
    unsafe_reasons,
)
from govern.rules.evidence import ClassFacts, plural
from govern.rules.model import Finding, Need, Severity
from govern.rules.sql.statement import CACHE_HINTS, Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


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

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        return screen.calls_at_least(int(self.settings["min-calls"]))

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
            f"{estimate.hits:,} ({estimate.ratio:.0%}), up to "
            f"{units.duration(saved, 'compact')} of "
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
