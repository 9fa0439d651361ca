"""govern.readonly: one read statement, as the server would read the text."""

from __future__ import annotations

import pytest

from govern.readonly import read_problem


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("SELECT 1", None),
        ("  (SELECT 'a', 1) ", None),
        ("SELECT 1; ", None),
        ("select 'x;y' -- a comment;\n", None),
        ("SELECT 1 /* ; DROP TABLE t */", None),
        ("SELECT `a;b` FROM t", None),
        ("SELECT 'it''s; fine', 'a\\';b'", None),
        ("#c\nWITH c AS (SELECT 1) SELECT * FROM c", None),
        ("SELECT update_time FROM t FOR UPDATE", None),
        ("SHOW GLOBAL STATUS", None),
        ("SELECT 1 --x", None),  # not a comment without the space: 1 - -x
        ("", "no statement"),
        ("-- only a comment\n", "no statement"),
        ("DROP TABLE t", "not DROP"),
        ("/*!50000 DROP TABLE t */", "not DROP"),  # the server runs what is inside
        ("SELECT 1 /*! ; DROP TABLE t */", "2 statements"),
        ("SELECT 1; SET GLOBAL read_only = 1", "2 statements"),
        ("WITH c AS (SELECT 1) DELETE FROM t", "not WITH … DELETE"),
        (
            "SELECT * FROM t INTO DUMPFILE '/x'",
            "not SELECT … INTO OUTFILE (it writes a file on the server)",
        ),
        ("CALL refresh()", "not CALL"),
    ],
)
def test_read_problem(sql: str, problem: str | None) -> None:
    assert read_problem(sql) == problem
