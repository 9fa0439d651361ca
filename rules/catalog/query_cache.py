"""Query-cache policy: SQL_CACHE only where the cache can store and correctly serve a result.

Facts behind these rules were measured on MariaDB 10.11.19 (docs/design/query-cache.md,
tests/rules/test_rules_server.py re-checks them on the test server) and taken from the
MySQL 5.7 manual ("How the Query Cache Operates"). The surprise: MariaDB's
explicit SQL_CACHE *overrides* its own "never cache" list, so a query with NOW(),
a user variable or FOR UPDATE is stored and a later identical query is served
from the cache: stale time, the first variable's result, no row locks taken.
"""

from __future__ import annotations

import dataclasses

from govern import units
from govern.rules.base import Context
from govern.rules.evidence import ClassFacts, DigestEvidence, plural
from govern.rules.sql.lexer import VAR, WORD
from govern.rules.sql.statement import Statement

#: Functions whose result is not a function of table data (MySQL's never-cache list).
VOLATILE_FUNCTIONS = frozenset(
    {
        "BENCHMARK",
        "CONNECTION_ID",
        "CONVERT_TZ",
        "CURDATE",
        "CURRENT_DATE",
        "CURRENT_ROLE",
        "CURRENT_TIME",
        "CURRENT_TIMESTAMP",
        "CURRENT_USER",
        "CURTIME",
        "DATABASE",
        "ENCRYPT",
        "FOUND_ROWS",
        "GET_LOCK",
        "IS_FREE_LOCK",
        "IS_USED_LOCK",
        "LAST_INSERT_ID",
        "LOAD_FILE",
        "LOCALTIME",
        "LOCALTIMESTAMP",
        "MASTER_POS_WAIT",
        "MASTER_GTID_WAIT",
        "NOW",
        "RAND",
        "RANDOM_BYTES",
        "RELEASE_ALL_LOCKS",
        "RELEASE_LOCK",
        "ROW_COUNT",
        "SCHEMA",
        "SESSION_USER",
        "SLEEP",
        "SOURCE_POS_WAIT",
        "SYSDATE",
        "SYSTEM_USER",
        "SYS_GUID",
        "USER",
        "UTC_DATE",
        "UTC_TIME",
        "UTC_TIMESTAMP",
        "UUID",
        "UUID_SHORT",
    }
)
#: Written without parentheses they are still function calls.
NILADIC_FUNCTIONS = frozenset(
    {
        "CURRENT_DATE",
        "CURRENT_TIME",
        "CURRENT_TIMESTAMP",
        "CURRENT_USER",
        "CURRENT_ROLE",
        "LOCALTIME",
        "LOCALTIMESTAMP",
        "UTC_DATE",
        "UTC_TIME",
        "UTC_TIMESTAMP",
    }
)


SEQUENCE_FUNCTIONS = frozenset({"NEXTVAL", "LASTVAL", "SETVAL"})
SYSTEM_SCHEMAS = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


def sql_cache_index(statement: Statement) -> int | None:
    """Index of SQL_CACHE among the options of the outermost SELECT, if it is there."""
    outer = statement.outer_select
    if outer is None or "SQL_CACHE" not in statement.words:
        return None
    for index in statement.select_option_indexes(outer):
        if statement.tokens[index].value == "SQL_CACHE":
            return index
    return None


def unsafe_reasons(statement: Statement, ctx: Context) -> list[str]:
    """What makes a query's result depend on more than its tables' data."""
    reasons: list[str] = []
    tokens = statement.tokens
    words = statement.words
    for index, token in enumerate(tokens):
        kind = token.kind
        if kind is WORD:
            value = token.value
            if value in VOLATILE_FUNCTIONS and (
                statement.is_call(index) or value in NILADIC_FUNCTIONS
            ):
                reasons.append(f"{value}()")
            elif value.lower() in ctx.stored_functions and statement.is_call(index):
                reasons.append(f"stored function {value.lower()}()")
        elif kind is VAR:
            before = tokens[index - 1] if index else None
            if before is None or before.value != "INTO":
                reasons.append(f"user variable {token.value}")
    depths = statement.depths
    if "FOR" in words or "LOCK" in words:
        for index in statement.word_indexes("FOR", "LOCK"):
            if depths[index] != 0 or index + 1 >= len(tokens):
                continue
            following = tokens[index + 1].value
            if tokens[index].value == "FOR" and following in ("UPDATE", "SHARE"):
                reasons.append(f"FOR {following} (locking read)")
            elif tokens[index].value == "LOCK" and following == "IN":
                reasons.append("LOCK IN SHARE MODE (locking read)")
    if "INTO" in words:
        for index in statement.word_indexes("INTO"):
            if depths[index] == 0 and index + 1 < len(tokens):
                reasons.append(f"INTO {tokens[index + 1].value}")
    return list(dict.fromkeys(reasons))


def never_stored_reasons(statement: Statement, ctx: Context) -> list[str]:
    """What the query cache refuses to store at all (measured on MariaDB 10.11)."""
    reasons: list[str] = []
    tables = statement.tables
    if not tables:
        reasons.append("no table")
    for table in tables:
        schema = (table.schema or "").lower()
        if schema in SYSTEM_SCHEMAS or (not schema and table.name.lower() in SYSTEM_SCHEMAS):
            reasons.append(f"system schema table {table.qualified}")
        elif table.name.lower() in ctx.temporary_tables:
            reasons.append(f"temporary table {table.qualified}")
    for index in statement.word_indexes(*SEQUENCE_FUNCTIONS, "NEXT", "PREVIOUS"):
        token = statement.tokens[index]
        if token.value in SEQUENCE_FUNCTIONS and statement.is_call(index):
            reasons.append(f"sequence {token.value}()")
        elif token.value in ("NEXT", "PREVIOUS") and _followed_by(statement, index, "VALUE", "FOR"):
            reasons.append(f"sequence {token.value} VALUE FOR")
    return list(dict.fromkeys(reasons))


def _followed_by(statement: Statement, index: int, *values: str) -> bool:
    following = statement.tokens[index + 1 : index + 1 + len(values)]
    return [t.value for t in following] == list(values)


def has_no_cache(ctx: Context) -> bool:
    return ctx.target is not None and not ctx.target.has_query_cache


#: query_cache_limit's default: larger results are never stored.
QUERY_CACHE_LIMIT = 1024 * 1024


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
