"""The shapes sqlglot accepted, kept across runs (rules/catalog/grammar_cache.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from govern.rules.catalog import grammar_cache
from govern.rules.catalog.parsing import grammar_accepts, grammar_problem
from govern.rules.sql.statement import Statement


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setattr("govern.rules.catalog.parsing._verdicts", {})
    return tmp_path / "govern" / "sqlglot-accepted"


def test_accepted_shapes_are_kept_rejected_ones_are_not(state: Path) -> None:
    assert grammar_accepts(Statement.from_sql("SELECT a FROM t WHERE b = 42"))
    assert grammar_problem(Statement.from_sql("SELECT a FROM t WHERE a =")) is not None
    records = state.read_bytes().split(b"\n", 1)[1]
    assert len(records) == 16  # one accepted shape, the rejected one not kept
    # Another literal is the same shape: known without sqlglot.
    assert grammar_cache.accepted_before("SELECT a FROM t WHERE b = 0")
    assert not grammar_cache.accepted_before("SELECT a FROM t WHERE a =")


def test_a_file_of_another_version_starts_afresh(state: Path) -> None:
    state.parent.mkdir(parents=True)
    old = b"govern sqlglot-accepted 1 sqlglot 29.0.0\n"
    state.write_bytes(old + grammar_cache.shape_hash("SELECT 0"))
    assert not grammar_cache.accepted_before("SELECT 0")
    grammar_cache.remember("SELECT 0")
    data = state.read_bytes()
    assert data.startswith(b"govern sqlglot-accepted 1 sqlglot 30.")
    assert len(data.split(b"\n", 1)[1]) == 16
    assert os.stat(state).st_mode & 0o777 == 0o600


def test_a_cut_record_and_an_unwritable_folder_are_no_error(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grammar_cache.remember("SELECT 0")
    with state.open("ab") as cut:
        cut.write(b"\x01\x02\x03")  # a record cut short (a full disk)
    monkeypatch.setattr(grammar_cache, "_known", None)
    assert grammar_cache.accepted_before("SELECT 0")
    blocked = state.parent.parent / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocked))  # its govern/ cannot be made
    grammar_cache.remember("SELECT 1")  # nothing written, nothing raised
    assert grammar_cache.accepted_before("SELECT 1")  # known for the rest of the run


def test_the_file_follows_govern_state(
    state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GOVERN_STATE moves the state file: the shapes' file goes beside it, not to XDG_STATE_HOME."""
    moved = tmp_path / "elsewhere" / "my-state.db"
    monkeypatch.setenv("GOVERN_STATE", str(moved))
    assert grammar_accepts(Statement.from_sql("SELECT a FROM t WHERE b = 42"))
    assert (moved.parent / "sqlglot-accepted").stat().st_mode & 0o777 == 0o600
    assert not state.exists()
