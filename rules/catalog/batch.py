"""Batching policy: multi-row writes of a sensible size, upserts written the server's way.

The house style is a multi-row ``INSERT … ON DUPLICATE KEY UPDATE`` of about 100
rows. Too few rows per statement pays a round trip, a parse and a commit per row;
too many runs into hard limits (65,535 placeholders, max_allowed_packet) and holds
locks long enough to delay replicas.
"""

from __future__ import annotations

from collections.abc import Iterator

from govern import units
from govern.rules.base import Context, Option, Rule
from govern.rules.evidence import ClassFacts, ceil_div, plural
from govern.rules.model import Finding, Need, Severity
from govern.rules.registry import register
from govern.rules.sql.lexer import NUMBER, OP, PARAM, QIDENT, STRING, WORD
from govern.rules.sql.statement import Statement

MAX_PLACEHOLDERS = 65_535
#: Rows per statement the batching advice and its estimates assume.
BATCH_ROWS = 100
#: The smallest default max_allowed_packet of the servers govern knows (MySQL 5.7: 4 MiB).
CONSERVATIVE_PACKET = 4 * 1024 * 1024


def logged_max(statement: Statement, metric: str) -> int | None:
    """The largest value of ``metric`` a digest class logged (None for files)."""
    if statement.stats is None:
        return None
    found = ClassFacts(statement.stats).metric(metric)
    return int(found["max"]) if found else None


def odku_reference(ctx: Context) -> str:
    """How to refer to the incoming row in ON DUPLICATE KEY UPDATE on the target."""
    target = ctx.target
    if target is None:
        return (
            "VALUE(col) on MariaDB, new.col with a row alias on MySQL 8.0.19+, VALUES(col) before"
        )
    if target.row_alias:
        return "a row alias: INSERT … VALUES (…) AS new ON DUPLICATE KEY UPDATE c = new.c"
    if target.value_function:
        return "VALUE(col) (or VALUES(col))"
    return "VALUES(col)"


@register
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


@register
class PacketShare(Rule):
    """A statement that takes a large share of max_allowed_packet.

    The server rejects a statement larger than max_allowed_packet (the connection
    drops with "Got a packet bigger than …"); long before that, huge statements
    stall replicas. The limit comes from the target (MySQL 8.0: 64 MiB, MariaDB
    10.2.4+: 16 MiB, MySQL 5.7: 4 MiB, or the live server's value), the option
    ``max-allowed-packet``, or, with neither, the conservative 4 MiB. Placeholders
    count ``placeholder-bytes`` each. On a digest the size is the class's largest
    logged statement (``Query_length``), not only its sample's.

    **Anti-pattern**

        -- config: {max-allowed-packet = 1024, share = 0.5}
        INSERT INTO notes (id, note) VALUES (1, 'a long note, repeated to fill the packet ................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................');

    **Best practice**

        -- config: {max-allowed-packet = 1024, share = 0.5}
        INSERT INTO notes (id, note) VALUES (1, 'short');
    """

    id = "BATCH002"
    name = "packet-share"
    severity = Severity.WARNING
    options = (
        Option("share", 0.5, "Flag statements above this fraction of max_allowed_packet."),
        Option("max-allowed-packet", 0, "Bytes; 0 takes the target's value (else 4 MiB)."),
        Option("placeholder-bytes", 16, "Bytes assumed per placeholder value."),
    )

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        limit, origin = self._limit(ctx)
        threshold = limit * float(self.settings["share"])
        text = statement.text
        extra = statement.placeholder_count * int(self.settings["placeholder-bytes"])
        logged = logged_max(statement, "Query_length")
        if logged is None and (len(text) + extra) * 4 < threshold:
            return  # cannot reach it even at 4 bytes a character
        size = max(len(text.encode("utf-8", "surrogatepass")) + extra, logged or 0)
        if size <= threshold:
            return
        evidence = {"bytes": size, "max_allowed_packet": limit, "limit_from": origin}
        if statement.stats is None:
            yield self.finding(
                statement,
                f"statement of about {size:,} bytes is {size / limit:.0%} of max_allowed_packet "
                f"({limit:,} bytes, {origin}): split it into smaller batches",
                evidence=evidence,
            )
            return
        facts = ClassFacts(statement.stats)
        above = facts.count_above("Query_length", threshold)
        yield self.finding(
            statement,
            f"statements of up to {size:,} bytes, {size / limit:.0%} of max_allowed_packet "
            f"({limit:,} bytes, {origin}); {above:,} of {plural(facts.calls, 'call')} above "
            f"{float(self.settings['share']):.0%}: split them into smaller batches",
            evidence=evidence | {"calls": facts.calls, "statements_above": above},
        )

    def _limit(self, ctx: Context) -> tuple[int, str]:
        configured = int(self.settings["max-allowed-packet"])
        if configured > 0:
            return configured, "configured"
        if ctx.target is not None and "max_allowed_packet" in ctx.target.variables:
            return ctx.target.max_allowed_packet, ctx.target_label
        return CONSERVATIVE_PACKET, "no target: MySQL 5.7's default"


@register
class RowsPerStatement(Rule):
    """More rows in one INSERT or REPLACE than the batch bound.

    Batches of about 100 rows take most of the gain of batching; much larger ones
    hold row locks and the binlog group longer and arrive at replicas as one long
    event that delays everything behind it. Bound: ``max-rows`` (default 1,000). On a
    digest the rows are the class's largest logged statement's (``Values_rows``).

    **Anti-pattern**

        -- config: {max-rows = 3}
        INSERT INTO daily_summary (day, cnt) VALUES ('2025-01-01', 1), ('2025-01-02', 2), ('2025-01-03', 3), ('2025-01-04', 4);

    **Best practice**

        -- config: {max-rows = 3}
        INSERT INTO daily_summary (day, cnt) VALUES ('2025-01-01', 1), ('2025-01-02', 2), ('2025-01-03', 3);
    """

    id = "BATCH003"
    name = "rows-per-statement"
    severity = Severity.WARNING
    options = (Option("max-rows", 1000, "Most rows one INSERT/REPLACE may carry."),)

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        bound = int(self.settings["max-rows"])
        rows = max(statement.row_count, logged_max(statement, "Values_rows") or 0)
        if rows <= bound:
            return
        evidence = {"rows": rows, "max_rows": bound}
        if statement.stats is None:
            yield self.finding(
                statement,
                f"{rows:,} rows in one {statement.verb}: above max-rows ({bound:,}); send "
                f"batches of about {BATCH_ROWS} rows",
                at=statement.values_index or 0,
                evidence=evidence,
            )
            return
        facts = ClassFacts(statement.stats)
        above = facts.count_above("Values_rows", bound)
        yield self.finding(
            statement,
            f"up to {rows:,} rows per {statement.verb or facts.verb.upper()}; {above:,} of "
            f"{plural(facts.calls, 'statement')} above max-rows ({bound:,}): send batches of "
            f"about {BATCH_ROWS} rows",
            at=statement.values_index or 0,
            evidence=evidence | {"calls": facts.calls, "statements_above": above},
        )


@register
class OdkuIfChain(Rule):
    """Per-key IF()/CASE chains in ON DUPLICATE KEY UPDATE instead of the incoming row.

    A hand-written upsert that repeats every row's values in the update clause,
    keyed on the primary key (``c = IF(id = 1, 10, IF(id = 2, 20, c))``), grows
    quadratically with the batch, is evaluated per row, and silently keeps the old
    value for any key it forgot. The server already hands you the incoming row:
    VALUE(col) on MariaDB, the row alias on MySQL 8.0.19+, VALUES(col) before.

    **Anti-pattern**

        INSERT INTO stats (id, hits) VALUES (1, 10), (2, 20), (3, 30)
        ON DUPLICATE KEY UPDATE hits = IF(id = 1, 10, IF(id = 2, 20, IF(id = 3, 30, hits)));

        INSERT INTO stats (id, hits) VALUES (1, 10), (2, 20)
        ON DUPLICATE KEY UPDATE hits = CASE id WHEN 1 THEN 10 WHEN 2 THEN 20 ELSE hits END;

    **Best practice**

        INSERT INTO stats (id, hits) VALUES (1, 10), (2, 20), (3, 30)
        ON DUPLICATE KEY UPDATE hits = VALUE(hits);

        INSERT INTO stats (id, hits) VALUES (1, 10)
        ON DUPLICATE KEY UPDATE hits = IF(hits > 100, hits, VALUE(hits));
    """

    id = "BATCH004"
    name = "odku-if-chain"
    severity = Severity.WARNING

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        start = statement.odku_index
        if start is None:
            return
        tokens = statement.tokens
        depths = statement.depths
        base = depths[start]
        # Split the update list into assignments at top-level commas.
        assignments: list[tuple[int, int]] = []
        first = start + 4
        for index in range(first, len(tokens) + 1):
            if index == len(tokens) or (
                tokens[index].kind is OP and tokens[index].value == "," and depths[index] == base
            ):
                assignments.append((first, index))
                first = index + 1
        for begin, end in assignments:
            keyed = self._key_tests(statement, begin, end)
            if keyed >= 2:
                column = tokens[begin].value if begin < len(tokens) else "?"
                yield self.finding(
                    statement,
                    f"ON DUPLICATE KEY UPDATE {column.lower()} picks the value per key with "
                    f"{keyed} IF()/CASE tests: use {odku_reference(ctx)}",
                    at=begin,
                    evidence={"key_tests": keyed, "column": column.lower()},
                )

    @staticmethod
    def _key_tests(statement: Statement, begin: int, end: int) -> int:
        """IF(col = literal, …) calls and CASE … WHEN literal branches in one assignment."""
        tokens = statement.tokens
        literal = (STRING, NUMBER, PARAM)
        tests = 0
        for index in range(begin, end):
            token = tokens[index]
            if token.kind is not WORD:
                continue
            if token.value == "IF" and statement.is_call(index) and index + 4 < end:
                a, op, b = tokens[index + 2], tokens[index + 3], tokens[index + 4]
                if op.value == "=" and (
                    (a.kind in (WORD, QIDENT) and b.kind in literal)
                    or (a.kind in literal and b.kind in (WORD, QIDENT))
                ):
                    tests += 1
            elif token.value == "WHEN" and index + 1 < end:
                following = tokens[index + 1]
                after = tokens[index + 2] if index + 2 < end else None
                if (following.kind in literal and after is not None and after.value == "THEN") or (
                    following.kind in (WORD, QIDENT) and after is not None and after.value == "="
                ):
                    tests += 1
        return tests


def _odku_calls(statement: Statement, name: str) -> list[int]:
    start = statement.odku_index
    if start is None:
        return []
    return [i for i in statement.word_indexes(name) if i > start and statement.is_call(i)]


@register
class OdkuValuesDeprecated(Rule):
    """VALUES(col) in ON DUPLICATE KEY UPDATE on MySQL 8.0.20+, where it is deprecated.

    MySQL 8.0.20 deprecates the VALUES() function there (warning 1287) in favour of
    the row alias added in 8.0.19. MariaDB keeps VALUES() and has VALUE(); it has no
    row alias, so this only applies to MySQL targets.

    **Anti-pattern**

        -- target: mysql-8.0
        INSERT INTO stats (id, hits) VALUES (1, 10) ON DUPLICATE KEY UPDATE hits = VALUES(hits);

    **Best practice**

        -- target: mysql-8.0
        INSERT INTO stats (id, hits) VALUES (1, 10) AS new ON DUPLICATE KEY UPDATE hits = new.hits;

        -- target: mariadb-10.11
        INSERT INTO stats (id, hits) VALUES (1, 10) ON DUPLICATE KEY UPDATE hits = VALUES(hits);
    """

    id = "BATCH005"
    name = "odku-values-deprecated"
    severity = Severity.WARNING
    needs = frozenset({Need.SQL, Need.TARGET})

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if ctx.target is None or not ctx.target.values_function_deprecated:
            return
        calls = _odku_calls(statement, "VALUES")
        if calls:
            yield self.finding(
                statement,
                f"VALUES() in ON DUPLICATE KEY UPDATE is deprecated on "
                f"{ctx.target_label} (warning 1287): use {odku_reference(ctx)}",
                at=calls[0],
                evidence={"calls": len(calls)},
            )


@register
class OdkuSyntaxUnsupported(Rule):
    """An upsert row alias (VALUES (…) AS new) on a server without one: a syntax error.

    The row alias exists from MySQL 8.0.19 and in no MariaDB release (measured:
    error 1064 on MariaDB 10.11). Use VALUE(col) on MariaDB 10.3+, VALUES(col) on
    older servers.

    **Anti-pattern**

        -- target: mariadb-10.11
        INSERT INTO stats (id, hits) VALUES (1, 10) AS new ON DUPLICATE KEY UPDATE hits = new.hits;

        -- target: mysql-5.7
        INSERT INTO stats (id, hits) VALUES (1, 10) AS new ON DUPLICATE KEY UPDATE hits = new.hits;

    **Best practice**

        -- target: mariadb-10.11
        INSERT INTO stats (id, hits) VALUES (1, 10) ON DUPLICATE KEY UPDATE hits = VALUE(hits);
    """

    id = "BATCH006"
    name = "odku-syntax-unsupported"
    severity = Severity.ERROR
    needs = frozenset({Need.SQL, Need.TARGET})

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        target = ctx.target
        alias = statement.row_alias_index
        if target is None or alias is None or target.row_alias:
            return
        yield self.finding(
            statement,
            f"row alias AS … after VALUES is a syntax error on "
            f"{ctx.target_label}: use {odku_reference(ctx)}",
            at=alias,
        )


def single_row_write(statement: Statement) -> bool:
    """An INSERT/REPLACE of one row, or an UPDATE/DELETE that picks rows by equality only."""
    verb = statement.verb
    if verb in ("INSERT", "REPLACE"):
        return statement.row_count == 1
    if verb not in ("UPDATE", "DELETE"):
        return False
    words = statement.words
    if "WHERE" not in words or words & {"IN", "BETWEEN", "LIKE", "JOIN", "SELECT", "OR"}:
        return False
    where = next(statement.word_indexes("WHERE"))
    ops = [t.value for t in statement.tokens[where:] if t.kind is OP]
    if any(op in ("<", ">", "<=", ">=", "<>", "!=") for op in ops):
        return False
    limit = [i for i in statement.word_indexes("LIMIT")]
    if limit:
        following = statement.next_code(limit[0])
        return following is not None and following.value == "1"
    return "=" in ops


def single_row_read(statement: Statement) -> bool:
    """SELECT … INTO variables (one row by construction)."""
    return statement.verb == "SELECT" and any(
        statement.depths[i] == 0 for i in statement.word_indexes("INTO")
    )


@register
class LoopRowAtATime(Rule):
    """Single-row INSERT/UPDATE/DELETE or SELECT … INTO inside a loop in a stored program.

    A LOOP, WHILE or REPEAT (often around a cursor's FETCH) that writes or reads one
    row per iteration pays a statement per row. Write the set at once (INSERT …
    SELECT, UPDATE … JOIN) or, when the loop is needed, collect rows and write them
    in multi-row batches of about 100. Loops that work in chunks (DELETE … LIMIT
    1000 until no row is left) are the right shape and are not flagged.

    **Anti-pattern**

        CREATE PROCEDURE copy_users()
        BEGIN
          DECLARE done INT DEFAULT 0;
          DECLARE v_id INT;
          DECLARE cur CURSOR FOR SELECT id FROM users;
          DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
          OPEN cur;
          copy: LOOP
            FETCH cur INTO v_id;
            IF done THEN LEAVE copy; END IF;
            INSERT INTO users_copy (id) VALUES (v_id);
          END LOOP;
          CLOSE cur;
        END;

    **Best practice**

        CREATE PROCEDURE copy_users()
        BEGIN
          INSERT INTO users_copy (id) SELECT id FROM users;
        END;

        CREATE PROCEDURE purge_notes()
        BEGIN
          REPEAT
            DELETE FROM notes WHERE created_at < NOW() - INTERVAL 30 DAY LIMIT 1000;
          UNTIL ROW_COUNT() = 0 END REPEAT;
        END;
    """

    id = "BATCH007"
    name = "loop-row-at-a-time"
    severity = Severity.WARNING

    def check(self, statement: Statement, ctx: Context) -> Iterator[Finding]:
        if not statement.loops:
            return
        if single_row_write(statement):
            what = f"single-row {statement.verb}"
        elif single_row_read(statement):
            what = "single-row SELECT … INTO"
        else:
            return
        loop = statement.loops[-1]
        line = statement.source.position(loop.token.start)[0]
        over = f"cursor loop over {loop.cursor}" if loop.cursor else f"{loop.kind} loop"
        yield self.finding(
            statement,
            f"{what} inside a {over} (line {line}): one statement per row; write the set "
            "at once (INSERT … SELECT) or in batches of about 100 rows",
            evidence={"loop": loop.kind, "loop_line": line, "cursor": loop.cursor},
        )


@register
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
