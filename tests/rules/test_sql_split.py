"""Tokeniser and splitter: what MySQL clients and migration tools treat as one statement."""

from __future__ import annotations

import io
import re

import pytest

from govern.rules.sql.lexer import ERROR, PARAM, STRING, VAR, WORD, Comment, Source, tokenize
from govern.rules.sql.split import parse_script, stream
from govern.rules.sql.statement import Statement
from tests.paths import TESTS


def texts(sql: str) -> list[str]:
    return [s.text for s in parse_script(sql).statements]


def test_semicolons_inside_strings_comments_and_identifiers() -> None:
    sql = "SELECT 'a;b'; SELECT \"c;\" /* ; */ FROM t; SELECT `x;y` FROM t -- ;\n;"
    assert texts(sql) == ["SELECT 'a;b'", 'SELECT "c;" /* ; */ FROM t', "SELECT `x;y` FROM t"]


def test_mysql_comment_and_string_rules() -> None:
    kinds = [(t.kind, t.value) for t in tokenize("SELECT 1--1, 'it''s', 'a\\'b' # c\n, @v, %s, ?")]
    assert (STRING, "'it''s'") in kinds and (STRING, "'a\\'b'") in kinds
    assert ("op", "-") in kinds  # 1--1 is arithmetic: -- needs a space to start a comment
    assert (VAR, "@v") in kinds
    assert [v for k, v in kinds if k is PARAM] == ["%s", "?"]


def test_executable_comments_are_code() -> None:
    words = [
        t.value for t in tokenize("SELECT /*!40001 SQL_NO_CACHE */ * FROM t") if t.kind is WORD
    ]
    assert words == ["SELECT", "SQL_NO_CACHE", "FROM", "T"]


def test_delimiter_lines_and_procedures_without_them() -> None:
    sql = (
        "DELIMITER //\n"
        "CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END //\n"
        "DELIMITER ;\n"
        "CREATE PROCEDURE q()\nBEGIN\n  IF 1 THEN SELECT 3; END IF;\n  CASE WHEN 1 THEN SELECT 4; END CASE;\nEND;\n"
        "SELECT CASE WHEN 1 THEN 2 END;\n"
    )
    script = parse_script(sql)
    assert [s.creates for s in script.statements] == ["PROCEDURE", "PROCEDURE", None]
    assert [b.text for b in script.statements[0].body] == ["SELECT 1", "SELECT 2"]
    assert [b.text for b in script.statements[1].body] == ["SELECT 3", "SELECT 4"]


def test_a_column_named_delimiter_is_not_a_client_command() -> None:
    assert texts("CREATE TABLE t (\ndelimiter CHAR(1)\n);\nSELECT 1;") == [
        "CREATE TABLE t (\ndelimiter CHAR(1)\n)",
        "SELECT 1",
    ]


def test_loops_and_cursors_in_bodies() -> None:
    sql = """CREATE PROCEDURE p()
BEGIN
  DECLARE c CURSOR FOR SELECT id FROM t;
  l: LOOP
    FETCH c INTO v;
    WHILE x DO INSERT INTO u VALUES (v); END WHILE;
  END LOOP l;
  REPEAT DELETE FROM t LIMIT 10; UNTIL ROW_COUNT() = 0 END REPEAT;
END;"""
    body = parse_script(sql).statements[0].body
    loops = {b.text: [(loop.kind, loop.cursor) for loop in b.loops] for b in body}
    assert loops["INSERT INTO u VALUES (v)"] == [("LOOP", "c"), ("WHILE", None)]
    assert loops["DELETE FROM t LIMIT 10"] == [("REPEAT", None)]
    assert loops["DECLARE c CURSOR FOR SELECT id FROM t"] == []


def test_positions_are_one_based_lines_and_columns() -> None:
    script = parse_script("SELECT 1;\n  SELECT\n    2;")
    assert [s.position() for s in script.statements] == [(1, 1), (2, 3)]
    assert script.statements[1].lines == (2, 3)
    assert Source("ab\ncd").position(4) == (2, 2)


def test_unterminated_string_is_a_token_not_a_crash() -> None:
    tokens = tokenize("SELECT 'abc\nFROM t")
    assert (
        tokens[-1].kind is ERROR
        and tokens[-1].value == "unterminated string: this ' is never closed"
    )
    assert tokens[-1].start == 7  # where it opened, so the finding names that line


def test_an_unterminated_block_comment_is_one_error_where_it_opens() -> None:
    tokens = tokenize("SELECT 1;\n/* not closed\nSELECT 2;")
    assert [(t.kind, t.value) for t in tokens][-1] == (
        ERROR,
        "unterminated comment: this /* is never closed",
    )
    assert tokens[-1].start == 10


def test_lines_starting_with_two_dashes_are_skipped_as_the_client_does() -> None:
    assert texts("--DROP INDEX i ON t;\nSELECT 1;\n  --1;") == ["SELECT 1", "--1"]


def test_version_999999_comments_are_comments() -> None:
    # line 1 of every current mariadb-dump file; 999999 is "no server"
    assert texts("/*M!999999\\- enable the sandbox mode */\nSELECT 1;") == ["SELECT 1"]
    assert texts("/*!40101 SET NAMES utf8mb4 */;") == ["SET NAMES utf8mb4"]


@pytest.mark.parametrize("delimiter", ["$$", "//", ";;", "@@", "$", "!", "|"])
def test_any_delimiter_ends_statements_where_the_client_would(delimiter: str) -> None:
    sql = (
        f"DELIMITER {delimiter}\n"
        f"CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END{delimiter}\n"
        f"CREATE FUNCTION f() RETURNS INT RETURN 1 {delimiter}\n"
        "DELIMITER ;\n"
        "SELECT 3;\n"
    )
    statements = parse_script(sql).statements
    assert [s.keyword for s in statements] == ["CREATE", "CREATE", "SELECT"]
    assert statements[0].text == "CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END"
    assert [b.text for b in statements[0].body] == ["SELECT 1", "SELECT 2"]
    assert all(s.open_delimiter is None for s in statements)


def test_a_delimiter_glued_to_a_word_splits_it() -> None:
    statements = parse_script("DELIMITER $$\nSELECT a$$SELECT b $$\n").statements
    assert [s.text for s in statements] == ["SELECT a", "SELECT b"]
    assert [t.value for t in statements[1].tokens] == ["SELECT", "B"]


def test_a_delimiter_block_never_closed_is_flagged_once() -> None:
    sql = "SELECT 0;\nDELIMITER $$\nCREATE PROCEDURE p() BEGIN SELECT 1; END\nDELIMITER ;\nSELECT 2;\n"
    statements = parse_script(sql).statements
    assert len(statements) == 2
    assert [s.open_delimiter for s in statements] == [None, ("$$", 2)]


def test_nested_blocks_under_a_delimiter_keep_their_loops() -> None:
    sql = (
        "DELIMITER //\n"
        "CREATE PROCEDURE p() BEGIN\n"
        "  outer_block: BEGIN\n"
        "    WHILE i < 10 DO BEGIN INSERT INTO t (a) VALUES (i); SET i = i + 1; END; END WHILE;\n"
        "  END outer_block;\n"
        "END//\n"
    )
    (statement,) = parse_script(sql).statements
    inner = [(b.keyword, [loop.kind for loop in b.loops]) for b in statement.body]
    assert inner == [("INSERT", ["WHILE"]), ("SET", ["WHILE"])]


def test_statement_structure_helpers() -> None:
    s = Statement.from_sql(
        "WITH c AS (SELECT id FROM a) SELECT SQL_CACHE x.id FROM c JOIN db1.b AS x USE INDEX (i) "
        "ON x.id = c.id, d WHERE 1"
    )
    assert s.verb == "SELECT" and s.outer_select == 9
    assert [t.qualified for t in s.tables] == ["a", "db1.b", "d"]
    insert = Statement.from_sql(
        "INSERT INTO t (a, b) VALUES (1, (2)), (3, 4) AS new ON DUPLICATE KEY UPDATE b = new.b"
    )
    assert (
        insert.row_count == 2
        and insert.row_alias_index is not None
        and insert.odku_index is not None
    )
    assert Statement.from_sql("INSERT INTO t SET a = 1").row_count == 1
    assert Statement.from_sql("INSERT INTO t SELECT * FROM u").row_count == 0


def _windowed(text: str, chunk: int) -> tuple[list[tuple[object, ...]], list[object]]:
    reader = io.StringIO(text)
    comments: list[Comment] = []
    statements = [
        (s.text, s.lines, s.position(), s.terminated, s.open_delimiter, [b.text for b in s.body])
        for s in stream(reader.read, "f.sql", comments, chunk=chunk)
    ]
    return statements, [(c.value, c.line, c.column, c.offset) for c in comments]


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
def test_reading_in_windows_gives_the_same_statements_and_positions(chunk: int) -> None:
    """Windows cut statements, strings, comments, DELIMITER lines and delimiters anywhere:
    each statement is read again whole, with the file's lines and columns."""
    text = (TESTS / "corpus" / "sql-oracle" / "dialect-cases.sql").read_text()
    text = text.replace(
        "SELECT 1;", "SELECT 1; -- govern: ignore[QC004]\n  SELECT 'x;y'; SELECT 2;"
    )
    whole, whole_comments = _windowed(text, len(text) + 1)
    assert len(whole) > 50 and whole_comments
    assert _windowed(text, chunk) == (whole, whole_comments)
    reference = [(s.text, s.lines, s.position()) for s in parse_script(text).statements]
    assert [w[:3] for w in whole] == reference


def test_integer_lists_lex_in_one_match_and_compact_to_their_ends() -> None:
    """A run of integers and commas is one regex match with the tokens of one match each;
    ``compact=True`` keeps of an ``IN (`` list its first item and comma, then its last."""
    spaced = ", ".join(str(n) for n in range(1, 41))
    tight = ",".join(str(n) for n in range(100, 112))
    text = f"SELECT a FROM t WHERE id IN ({spaced}) AND b IN ({tight})"
    text += " OR (c, d) = (1,2,3,4,5,6,7,8,9)"
    full = tokenize(text)
    expected = [(m.group(), m.start()) for m in re.finditer(r"\w+|[(),=]", text)]
    assert [(text[t.start : t.end], t.start) for t in full] == expected
    compact = tokenize(text, compact=True)
    values = [t.value for t in compact]
    at = values.index("IN")
    assert values[at : at + 6] == ["IN", "(", "1", ",", "40", ")"]
    at = values.index("IN", at + 1)
    assert values[at : at + 6] == ["IN", "(", "100", ",", "111", ")"]
    assert values[-19:] == [t.value for t in full[-19:]]  # (1,2,…,9) follows no IN
    assert set(compact) <= set(full) and len(full) - len(compact) == 38 * 2 + 10 * 2
    statement = Statement.from_sql(text, compact=True)
    assert statement.tokens == compact and statement.expanded().tokens == full
    assert statement.text == statement.expanded().text == text
