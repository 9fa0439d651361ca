"""MariaDB's ``started with:`` banner is a record boundary, in both engines.

Toggling the slow log ON makes MariaDB write its start banner into the file
(``/usr/sbin/mariadbd, Version: … started with:``, ``Tcp port: …``, ``Time Id
Command Argument``). pt-query-digest's banner pattern only knows ``mysqld``, so it
glues the event before a MariaDB banner to the one after it into a junk class. govern
reads the banner as a boundary and counts it (docs/design/digest-engines.md, "Departures from pt").
The log here is recorded around a real ``govern run --mode global``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from govern import native
from govern.slowlog import iter_events
from tests.digest.slowlogs import recording
from tests.digest.support import PT_QUERY_DIGEST

pytestmark = pytest.mark.server

BEFORE = "SELECT id FROM banner_before WHERE id > %s LIMIT 5"
AFTER = "SELECT id FROM banner_after WHERE id < %s LIMIT 5"


def _digest(log: Path, *, python: bool, extra: tuple[str, ...] = ()) -> Any:
    env = {**os.environ, "GOVERN_NATIVE": "0" if python else "1"}
    return subprocess.run(
        [sys.executable, "-m", "govern", "digest", str(log), "--format", "json", *extra],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.fixture
def toggled_log(server: Any, connect: Any, tmp_path: Path) -> Path:
    """A slow log with the events of a client before and after a global-mode run."""
    setup = connect("govern_app", database="app")
    with setup.cursor() as cur:
        for table in ("banner_before", "banner_after"):
            cur.execute(f"CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY)")
    with recording(server, "banner-run") as log:
        conn = connect("govern_app", database="app")  # a session copies the log's switch
        with conn.cursor() as cur:
            for n in range(3):
                cur.execute(BEFORE, (n,))
        run = subprocess.run(
            [
                sys.executable, "-m", "govern", "run",
                "--defaults-file", str(server.defaults_file("govern_admin")),
                "--state", str(tmp_path / "state.db"),
                "--mode", "global", "--", "true",
            ],
            capture_output=True,
            text=True,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        time.sleep(0.1)
        with conn.cursor() as cur:
            for n in range(4):
                cur.execute(AFTER, (n,))
    return log


def _classes(document: dict[str, Any]) -> dict[str, int]:
    return {item["fingerprint"]: item["count"] for item in document["classes"]}


@pytest.mark.parametrize("python", [True, False], ids=["python", "native"])
def test_the_banner_ends_a_record_and_is_counted(toggled_log: Path, python: bool) -> None:
    if not python and not native.available():
        pytest.skip("native core not built (no cargo)")
    text = toggled_log.read_bytes()
    banners = text.count(b"started with:")
    assert banners >= 2, "the file's own banner and the one of the run's restore"
    assert b"mariadbd, Version" in text
    done = _digest(toggled_log, python=python)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    classes = _classes(document)
    assert not [f for f in classes if "mariadbd" in f or "started with" in f]
    assert classes["select id from banner_before where id > ? limit ?"] == 3
    assert classes["select id from banner_after where id < ? limit ?"] == 4
    assert document["totals"]["banners"] == banners


def test_both_engines_agree_and_no_rule_trips_on_a_banner(toggled_log: Path) -> None:
    if not native.available():
        pytest.skip("native core not built (no cargo)")
    python = _digest(toggled_log, python=True, extra=("--fail-on", "error"))
    core = _digest(toggled_log, python=False, extra=("--fail-on", "error"))
    assert python.returncode == core.returncode == 0, python.stdout[-2000:]
    assert json.loads(python.stdout) == json.loads(core.stdout)


def test_pt_query_digest_glues_the_events_around_it(toggled_log: Path) -> None:
    """The deliberate difference, shown on pt itself: its class holds the banner."""
    if PT_QUERY_DIGEST is None:
        pytest.skip("pt-query-digest is not installed (scripts/test installs percona-toolkit)")
    out = subprocess.run(
        [PT_QUERY_DIGEST, "--no-version-check", "--output", "json", "--limit", "100%",
         str(toggled_log)],
        capture_output=True,
        check=True,
    ).stdout  # fmt: skip
    fingerprints = [c["fingerprint"] for c in json.loads(out)["classes"]]
    assert [f for f in fingerprints if "mariadbd, version" in f]


def test_library_events_split_at_the_banner(toggled_log: Path) -> None:
    queries = [event.query for event in iter_events(toggled_log.read_bytes())]
    assert not [q for q in queries if "mariadbd" in q]
    assert sum(q.startswith("SELECT id FROM banner_after") for q in queries) == 4
