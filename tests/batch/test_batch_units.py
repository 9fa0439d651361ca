"""The batching rules as pure functions: counts, statement forms, sizes, identifiers."""

from __future__ import annotations

import pytest

from govern.batch import sizing, statements
from govern.batch.counts import CountsUnavailable, parse_info, split_affected
from govern.batch.identifiers import quote, split_table_name
from govern.errors import UsageError
from govern.server import build_info


def server(version: str) -> object:
    return build_info({"version": version, "version_comment": ""})


def test_info_line_with_and_without_the_session_track_length_byte() -> None:
    assert parse_info(b"&Records: 4  Duplicates: 2  Warnings: 0") == (4, 2, 0)
    assert parse_info("Records: 10  Duplicates: 0  Warnings: 3") == (10, 0, 3)
    assert parse_info(b"") is None and parse_info(None) is None


# Figures measured on MariaDB 10.11 (tests/batch/test_batch.py checks them live): a 5-row upsert
# with 1 unchanged, 1 updated, 2 inserted and 1 in-statement duplicate of an inserted row.
def test_split_without_found_rows() -> None:
    counts = split_affected(5, 4, b"Records: 5  Duplicates: 1  Warnings: 0", found_rows=False)
    assert (counts.inserted, counts.updated, counts.unchanged) == (2, 1, 2)


def test_split_with_found_rows() -> None:
    counts = split_affected(5, 6, b"Records: 5  Duplicates: 3  Warnings: 0", found_rows=True)
    assert (counts.inserted, counts.updated, counts.unchanged) == (2, 1, 2)


def test_padding_copies_are_taken_off_unchanged() -> None:
    counts = split_affected(
        5, 2, b"Records: 5  Duplicates: 0  Warnings: 0", found_rows=False, padding=3
    )
    assert (counts.inserted, counts.updated, counts.unchanged) == (2, 0, 0)


@pytest.mark.parametrize(("affected", "expected"), [(1, (1, 0, 0)), (2, (0, 1, 0)), (0, (0, 0, 1))])
def test_single_row_needs_no_info(affected: int, expected: tuple[int, int, int]) -> None:
    counts = split_affected(1, affected, b"", found_rows=False)
    assert (counts.inserted, counts.updated, counts.unchanged) == expected


def test_ambiguous_or_inconsistent_figures_are_refused() -> None:
    with pytest.raises(CountsUnavailable):
        split_affected(1, 1, None, found_rows=True)  # inserted or unchanged?
    with pytest.raises(CountsUnavailable):
        split_affected(3, 9, b"Records: 3  Duplicates: 0  Warnings: 0", found_rows=False)


@pytest.mark.parametrize(
    ("version", "form"),
    [
        ("8.0.19", statements.UpdateForm.ROW_ALIAS),
        ("8.4.2", statements.UpdateForm.ROW_ALIAS),
        ("8.0.18", statements.UpdateForm.VALUES),
        ("5.7.44-log", statements.UpdateForm.VALUES),
        ("10.11.19-MariaDB-0+deb12u1", statements.UpdateForm.VALUE),
        ("10.2.44-MariaDB", statements.UpdateForm.VALUES),
    ],
)
def test_update_form_per_server(version: str, form: statements.UpdateForm) -> None:
    assert statements.update_form(server(version)) is form  # type: ignore[arg-type]


def test_statement_texts() -> None:
    prefix = statements.insert_prefix("`app`.`t`", ["id", "v"])
    value = statements.on_duplicate(statements.UpdateForm.VALUE, ["v"], noop_column="id")
    alias = statements.on_duplicate(statements.UpdateForm.ROW_ALIAS, ["v"], noop_column="id")
    values = statements.on_duplicate(statements.UpdateForm.VALUES, ["v"], noop_column="id")
    keep = statements.on_duplicate(statements.UpdateForm.VALUE, [], noop_column="id")
    assert statements.multi_row(prefix, 2, 3, value) == (
        "INSERT INTO `app`.`t` (`id`, `v`) VALUES (%s, %s), (%s, %s), (%s, %s)"
        " ON DUPLICATE KEY UPDATE `v` = VALUE(`v`)"
    )
    assert alias == " AS `new` ON DUPLICATE KEY UPDATE `v` = `new`.`v`"
    assert values == " ON DUPLICATE KEY UPDATE `v` = VALUES(`v`)"
    assert keep == " ON DUPLICATE KEY UPDATE `id` = `id`"
    assert statements.row_alias_name("New") == "new_row"
    assert "IF(" not in value + alias + values


def test_placeholder_limit_caps_rows_per_statement() -> None:
    assert sizing.rows_per_statement(100, 6) == 100
    assert sizing.rows_per_statement(100, 700) == 93  # 93 * 700 = 65,100 <= 65,535
    assert sizing.rows_per_statement(100_000, 1) == 65_535
    assert sizing.rows_per_statement(10, 70_000) == 1


def test_value_bytes_is_an_upper_bound_of_the_escaped_literal() -> None:
    import pymysql.converters as conv

    for value in ["plain", "it's \\ \x00 \n", "żółw 🐢", b"\x00\x27\x5c\xff", 12345, 1.5e300, None]:
        literal = conv.escape_item(value, "utf8mb4")  # bytes: "_binary X'…'" (the longer form)
        assert len(literal.encode("utf-8", "surrogateescape")) + 2 <= sizing.value_bytes(value)


def test_identifiers_are_checked_and_quoted() -> None:
    assert quote("we`ird") == "`we``ird`"
    assert split_table_name("app.t") == ("app", "t")
    assert split_table_name("app.a.b") == ("app", "a.b")
    assert split_table_name("t") == (None, "t")
    for bad in ["", "x" * 65, "a\x00b", "trailing "]:
        with pytest.raises(UsageError):
            quote(bad)
