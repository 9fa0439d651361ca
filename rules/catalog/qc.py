"""Query-cache policy: SQL_CACHE only where the cache can store and correctly serve a result.

Facts behind these rules were measured on MariaDB 10.11.19 (docs/design/query-cache.md,
tests/rules/test_rules_server.py re-checks them on the test server) and taken from the
MySQL 5.7 manual ("How the Query Cache Operates"). The surprise: MariaDB's
explicit SQL_CACHE *overrides* its own "never cache" list, so a query with NOW(),
a user variable or FOR UPDATE is stored and a later identical query is served
from the cache: stale time, the first variable's result, no row locks taken.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator

from govern.rules.base import Context, Option, Rule
from govern.rules.model import Finding, Need, Severity
from govern.rules.registry import register
from govern.rules.sql.lexer import SYSVAR, VAR, WORD
from govern.rules.sql.statement import CACHE_HINTS, Statement

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


def _has_no_cache(ctx: Context) -> bool:
    return ctx.target is not None and not ctx.target.has_query_cache


@register
class SqlCacheUnsafe(Rule):
    """SQL_CACHE on a query whose result depends on more than its tables' data.

    NOW(), RAND(), UUID(), user variables, stored functions, locking reads (FOR
    UPDATE, LOCK IN SHARE MODE) and SELECT … INTO make a result the cache must not
    serve twice. MySQL never caches such a query, so SQL_CACHE is dead weight. MariaDB
    (measured on 10.11) honours the explicit SQL_CACHE anyway: the next identical
    query gets the stored result, so NOW() stands still, UUID() repeats, the result
    for the first value of @uid is returned for every value, FOR UPDATE takes no lock
    and INTO neither assigns the variables nor writes the file.

    **Anti-pattern**

        SELECT SQL_CACHE id, status FROM orders WHERE created_at > NOW() - INTERVAL 1 DAY;

        SELECT SQL_CACHE name FROM users WHERE id = @uid;

        SELECT SQL_CACHE balance FROM accounts WHERE id = 7 FOR UPDATE;

    **Best practice**

        SELECT id, status FROM orders WHERE created_at > NOW() - INTERVAL 1 DAY;

        SELECT SQL_CACHE day, total FROM daily_summary WHERE day = '2025-01-01';
    """

    id = "QC001"
    name = "sql-cache-unsafe"
    severity = Severity.ERROR

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        at = sql_cache_index(statement)
        if at is None or _has_no_cache(ctx):
            return
        reasons = unsafe_reasons(statement, ctx)
        if not reasons:
            return
        target = ctx.target
        if target is not None and target.is_mariadb:
            effect = "MariaDB stores it anyway and serves that result to the next identical query"
        elif target is not None:
            effect = "MySQL never caches it: SQL_CACHE does nothing here"
        else:
            effect = (
                "MySQL never caches it; MariaDB stores it anyway and serves a stale result "
                "to the next identical query"
            )
        yield self.finding(
            statement,
            f"SQL_CACHE on a query the cache must not serve ({', '.join(reasons)}): {effect}",
            at=at,
            evidence={"reasons": reasons},
        )


@register
class SqlCachePlacement(Rule):
    """SQL_CACHE or SQL_NO_CACHE anywhere but among the options of the outermost SELECT.

    The cache stores whole statements, so the hint belongs right after the SELECT
    that starts the statement (after a WITH clause, or inside the parentheses of a
    first UNION branch, is fine). In a subquery, a derived table or a later UNION
    branch it is error 1234; SQL_CACHE with SQL_NO_CACHE is error 1221; a repeated
    hint is error 1225. In INSERT … SELECT or CREATE TABLE … SELECT it is accepted and
    does nothing: only SELECT statements are cached.

    **Anti-pattern**

        SELECT o.id FROM (SELECT SQL_CACHE id FROM orders) AS o;

        SELECT id FROM orders UNION SELECT SQL_CACHE id FROM archived_orders;

        SELECT SQL_CACHE SQL_NO_CACHE id FROM orders;

        INSERT INTO order_ids SELECT SQL_CACHE id FROM orders;

    **Best practice**

        SELECT SQL_CACHE o.id FROM (SELECT id FROM orders) AS o;

        (SELECT SQL_CACHE id FROM orders) UNION (SELECT id FROM archived_orders);
    """

    id = "QC002"
    name = "sql-cache-placement"
    severity = Severity.ERROR

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if not (statement.words & CACHE_HINTS):
            return
        outer = statement.outer_select
        options_of: dict[int, int] = {}
        for select_index in statement.selects:
            for index in statement.select_option_indexes(select_index):
                options_of[index] = select_index
        seen: dict[int, list[str]] = {}
        for index in statement.word_indexes(*CACHE_HINTS):
            hint = statement.tokens[index].value
            select = options_of.get(index)
            if select is None:
                yield self.finding(
                    statement, f"{hint} is not a SELECT option here: a syntax error", at=index
                )
                continue
            previous = seen.setdefault(select, [])
            if previous:
                error = "error 1225 (repeated)" if hint in previous else "error 1221 (conflict)"
                yield self.finding(
                    statement,
                    f"{' and '.join([*previous, hint])} on one SELECT: {error}",
                    at=index,
                )
            previous.append(hint)
            if outer is None and statement.verb != "SELECT":
                yield self.finding(
                    statement,
                    f"{hint} in {statement.verb} … SELECT does nothing: only SELECT statements "
                    "are cached",
                    at=index,
                    severity=Severity.WARNING,
                )
            elif select != outer:
                yield self.finding(
                    statement,
                    f"{hint} in a subquery, derived table or later UNION branch: error 1234; "
                    "put it after the outermost SELECT",
                    at=index,
                )


@register
class QueryCacheUnavailable(Rule):
    """Query-cache syntax or settings for a server that has no query cache (or has it off).

    MySQL removed the query cache in 8.0.3: SQL_CACHE is then a syntax error (or is
    read as a column name), ``query_cache_*`` variables are unknown and FLUSH/RESET
    QUERY CACHE fail; a ``query_cache_size`` line in my.cnf stops 8.0 from starting.
    SQL_NO_CACHE is accepted, ignored and warns. Read from a live server, a MariaDB
    whose ``query_cache_type`` is OFF or ``query_cache_size`` is 0 ignores SQL_CACHE.

    **Anti-pattern**

        -- target: mysql-8.0
        SELECT SQL_CACHE day, total FROM daily_summary;

        -- target: mysql-8.0
        SET GLOBAL query_cache_type = DEMAND;

    **Best practice**

        -- target: mysql-8.0
        SELECT day, total FROM daily_summary;

        -- target: mariadb-10.11
        SELECT SQL_CACHE day, total FROM daily_summary;
    """

    id = "QC003"
    name = "query-cache-unavailable"
    severity = Severity.ERROR
    needs = frozenset({Need.SQL, Need.TARGET})

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        target = ctx.target
        if target is None:
            return
        words = statement.words
        if not target.has_query_cache:
            yield from self._removed(statement, ctx.target_label)
            return
        kind = (target.query_cache_type or "").upper()
        size = target.variables.get("query_cache_size")
        off = kind in ("OFF", "0") or size == "0"
        at = sql_cache_index(statement)
        if off and at is not None and "SQL_CACHE" in words:
            yield self.finding(
                statement,
                f"SQL_CACHE is ignored: this server's query cache is off "
                f"(query_cache_type={kind or '?'}, query_cache_size={size or '?'})",
                at=at,
                severity=Severity.WARNING,
            )

    def _removed(self, statement: Statement, target: str) -> Iterator[Finding]:
        words = statement.words
        tokens = statement.tokens
        for index in statement.word_indexes(*CACHE_HINTS):
            hint = tokens[index].value
            if hint == "SQL_CACHE":
                message = f"SQL_CACHE on {target}, which has no query cache: a syntax error"
                yield self.finding(statement, message, at=index)
            else:
                message = f"SQL_NO_CACHE on {target}: accepted, ignored, and warns"
                yield self.finding(statement, message, at=index, severity=Severity.INFO)
        if "QUERY" in words and "CACHE" in words and statement.keyword in ("FLUSH", "RESET"):
            message = f"{statement.keyword} QUERY CACHE on {target}, which has no query cache"
            yield self.finding(statement, message)
        for index, token in enumerate(tokens):
            name = token.value.lower()
            if token.kind is SYSVAR and "query_cache" in name:
                message = f"{token.value} does not exist on {target}"
                yield self.finding(statement, message, at=index)
            elif (
                token.kind is WORD
                and name.startswith("query_cache_")
                and statement.keyword == "SET"
                and (index + 1 < len(tokens) and tokens[index + 1].value in ("=", ":="))
            ):
                message = f"{name} does not exist on {target} (unknown system variable)"
                yield self.finding(statement, message, at=index)


@register
class SqlCacheNeverStored(Rule):
    """SQL_CACHE on a query the cache never stores: the hint does nothing.

    No table (or only DUAL), a system schema (mysql, information_schema,
    performance_schema, sys), a temporary table created in the same file, or a
    sequence (NEXTVAL(), NEXT VALUE FOR): measured on MariaDB 10.11, each run counts
    in Qcache_not_cached and never hits.

    **Anti-pattern**

        SELECT SQL_CACHE 1;

        SELECT SQL_CACHE table_name FROM information_schema.tables;

        CREATE TEMPORARY TABLE tmp_ids (id INT PRIMARY KEY);
        SELECT SQL_CACHE COUNT(*) FROM tmp_ids;

    **Best practice**

        SELECT table_name FROM information_schema.tables;

        SELECT SQL_CACHE COUNT(*) FROM daily_summary;
    """

    id = "QC004"
    name = "sql-cache-never-stored"
    severity = Severity.WARNING

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        at = sql_cache_index(statement)
        if at is None or _has_no_cache(ctx):
            return
        reasons = never_stored_reasons(statement, ctx)
        if reasons:
            yield self.finding(
                statement,
                f"SQL_CACHE on a query the cache never stores ({', '.join(reasons)})",
                at=at,
                evidence={"reasons": reasons},
            )


@register
class SqlCachePolicy(Rule):
    """SQL_CACHE outside the allowlist of cacheable tables (and, with DEMAND, missing on them).

    The policy behind query_cache_type=DEMAND: only reads of tables that change
    rarely and are read often (summary tables, say) carry SQL_CACHE, because every
    write to a table drops all its cached results. List them in ``tables`` (names
    or ``schema.name``, glob patterns); with ``demand = true`` a cacheable read of
    only allowlisted tables without SQL_CACHE is flagged too. Without ``tables`` the
    rule does nothing.

    **Anti-pattern**

        -- config: {tables = ["daily_summary", "*_summary"]}
        SELECT SQL_CACHE id, email FROM users WHERE id = 42;

        -- config: {tables = ["daily_summary"], demand = true}
        SELECT day, total FROM daily_summary WHERE day >= '2025-01-01';

    **Best practice**

        -- config: {tables = ["daily_summary"], demand = true}
        SELECT SQL_CACHE day, total FROM daily_summary WHERE day >= '2025-01-01';

        -- config: {tables = ["daily_summary"], demand = true}
        SELECT id, email FROM users WHERE id = 42;
    """

    id = "QC005"
    name = "sql-cache-policy"
    severity = Severity.WARNING
    options = (
        Option("tables", [], "Tables whose reads may carry SQL_CACHE (glob patterns)."),
        Option("demand", False, "Also flag cacheable reads of those tables without SQL_CACHE."),
    )

    def _allowed(self, schema: str | None, name: str) -> bool:
        candidates = [name.lower()] + ([f"{schema}.{name}".lower()] if schema else [])
        return any(
            fnmatch.fnmatchcase(candidate, pattern.lower())
            for pattern in self.settings["tables"]
            for candidate in candidates
        )

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if not self.settings["tables"] or statement.outer_select is None or _has_no_cache(ctx):
            return
        tables = statement.tables
        at = sql_cache_index(statement)
        if at is not None:
            others = [t.qualified for t in tables if not self._allowed(t.schema, t.name)]
            if others:
                yield self.finding(
                    statement,
                    f"SQL_CACHE on a read of {', '.join(others)}: only allowlisted tables may "
                    "be cached (every write to a table drops its cached results)",
                    at=at,
                    evidence={"tables": others, "allowlist": list(self.settings["tables"])},
                )
            return
        if not self.settings["demand"] or not tables or "SQL_NO_CACHE" in statement.words:
            return
        if not all(self._allowed(t.schema, t.name) for t in tables):
            return
        if unsafe_reasons(statement, ctx) or never_stored_reasons(statement, ctx):
            return
        names = ", ".join(dict.fromkeys(t.qualified for t in tables))
        yield self.finding(
            statement,
            f"read of allowlisted {names} without SQL_CACHE: with query_cache_type=DEMAND "
            "only SQL_CACHE reads are cached",
            at=statement.outer_select,
            evidence={"tables": [t.qualified for t in tables]},
        )
