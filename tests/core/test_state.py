"""The state store: private file, WAL, busy timeout, named migrations."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from govern import state
from govern.errors import ConfigError
from govern.state import Migration, StateStore


def test_created_private_with_wal_and_busy_timeout(state_path: Path) -> None:
    with StateStore.open(state_path) as store:
        store.set_meta("k", "v")
        assert store.get_meta("k") == "v"
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.db.execute("PRAGMA busy_timeout").fetchone()[0] == state.BUSY_TIMEOUT_MS
    assert stat.S_IMODE(state_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(state_path.parent.stat().st_mode) == 0o700
    for sidecar in state_path.parent.glob("*-wal"):
        assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600


def test_existing_loose_permissions_are_tightened(state_path: Path) -> None:
    state_path.parent.mkdir(parents=True)
    state_path.touch(mode=0o644)
    os.chmod(state_path, 0o644)
    StateStore.open(state_path).close()
    assert stat.S_IMODE(state_path.stat().st_mode) == 0o600


def test_default_path_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert state.default_state_path() == tmp_path / "xdg" / "govern" / "state.db"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert (
        state.default_state_path() == tmp_path / "home" / ".local" / "state" / "govern" / "state.db"
    )


def test_migrations_upgrade_an_older_file_once(
    state_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with StateStore.open(state_path) as store:
        assert store.applied_migrations() == [m.id for m in state.MIGRATIONS]
        version_before = store.schema_version
    newer = [
        *state.MIGRATIONS,
        Migration("9999_test_table", "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)"),
    ]
    monkeypatch.setattr(state, "MIGRATIONS", newer)
    with StateStore.open(state_path) as store:
        assert store.schema_version == version_before + 1
        assert [tuple(r) for r in store.db.execute("SELECT x FROM t")] == [(1,)]
        assert store.migrate() == []  # idempotent


def test_failed_migration_rolls_back(state_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    StateStore.open(state_path).close()
    broken = [*state.MIGRATIONS, Migration("9998_broken", "CREATE TABLE ok (x INTEGER); NOT SQL")]
    monkeypatch.setattr(state, "MIGRATIONS", broken)
    with pytest.raises(ConfigError, match="not a usable govern state file"):
        StateStore.open(state_path)
    conn = sqlite3.connect(state_path)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'ok'").fetchall() == []
    conn.close()


def test_concurrent_openers_migrate_once(state_path: Path) -> None:
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            StateStore.open(state_path).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with StateStore.open(state_path) as store:
        assert len(store.applied_migrations()) == len(state.MIGRATIONS)


def test_garbage_file_is_a_config_error(state_path: Path) -> None:
    state_path.parent.mkdir(parents=True)
    state_path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError, match="not a usable govern state file"):
        StateStore.open(state_path)


def _open_after(path: str, barrier: Any) -> str:
    barrier.wait()
    try:
        StateStore.open(path).close()
    except ConfigError as exc:
        return exc.message
    return "ok"


def test_processes_opening_a_new_file_together_all_succeed(tmp_path: Path) -> None:
    """`govern run` and its watchdog open a fresh state file at once: SQLite's WAL switch
    answers "database is locked" without waiting, so the store retries it."""
    context = multiprocessing.get_context("fork")
    failures = []
    with context.Manager() as manager, context.Pool(4) as pool:
        for round_ in range(40):
            path = str(tmp_path / f"race-{round_}" / "state.db")
            barrier = manager.Barrier(4)
            failures += [r for r in pool.starmap(_open_after, [(path, barrier)] * 4) if r != "ok"]
    assert failures == []
