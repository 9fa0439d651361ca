"""BATCH007: Single-row INSERT/UPDATE/DELETE or SELECT … INTO inside a loop in a stored program."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from govern.rules.base import Context, Rule
from govern.rules.catalog.batching import single_row_read, single_row_write
from govern.rules.model import Finding, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.screen import Screen


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

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int]:
        return set()  # a digest class's sample is never inside a loop

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
