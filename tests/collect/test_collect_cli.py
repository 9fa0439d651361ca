"""``govern collect`` as users run it: one line and the documented exit code for every
mistake, the govern.collect document, the service stopped by SIGTERM after its poll."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.collect.support import govern, one_shot, records
from tests.harness import MariaDB
from tests.paths import REPO, SLOWLOGS


def base(tmp_path: Path) -> list[str]:
    return ["--to", str(tmp_path / "buckets"), "--state", str(tmp_path / "state.db")]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "nothing to collect: give slow-log files, --table or --performance-schema"),
        (["--json-field", "log", "--table"], "--json-field: only for slow-log files given as arguments"),
        (["LOG", "--bucket", "7m"], "--bucket 7m: must divide a day (1m, 5m, 15m, 1h, 1d …)"),
        (["LOG", "--bucket", "soon"], "--bucket: expected a duration like 90, 90s, 15m, 1h30m or 500ms, got 'soon'"),
        (["LOG", "--settle", "x"], "--settle: expected a duration like 90, 90s, 15m, 1h30m or 500ms, got 'x'"),
        (["MISSING"], "MISSING: no such file"),
        (["DIR"], "DIR: is a directory (give the slow-log file)"),
    ],
)  # fmt: skip
def test_mistakes_give_one_line_and_exit_2(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    log = tmp_path / "slow.log"
    log.write_bytes((SLOWLOGS / "mariadb.log").read_bytes())
    places = {"LOG": str(log), "MISSING": str(tmp_path / "missing.log"), "DIR": str(tmp_path)}
    given = [places.get(argument, argument) for argument in arguments]
    result = govern("collect", *given, *base(tmp_path), "--once")
    assert result.returncode == 2, result.stderr
    expected = message
    for name, place in places.items():
        expected = expected.replace(name, place) if name in arguments else expected
    assert result.stderr.splitlines() == [f"govern: error: {expected}"]


def test_json_needs_once(tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    log.write_bytes((SLOWLOGS / "mariadb.log").read_bytes())
    result = govern("collect", str(log), *base(tmp_path), "--json")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["govern: error: --json: only with --once"]


def test_without_a_bucket_directory_it_says_where_buckets_go(tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    log.write_bytes((SLOWLOGS / "mariadb.log").read_bytes())
    result = govern("collect", str(log), "--once", "--state", str(tmp_path / "s.db"))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "govern: error: --to DIR or --store URL: where the buckets go (govern.digest files,"
        " or a history store)"
    ]


def test_an_unwritable_bucket_directory_is_a_config_error(tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    log.write_bytes((SLOWLOGS / "mariadb.log").read_bytes())
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = govern(
        "collect", str(log), "--once", "--to", str(blocker / "b"), "--state", str(tmp_path / "s.db")
    )
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"govern: error: {blocker / 'b'}: cannot create the bucket directory")


def test_server_sources_on_an_unreachable_server_exit_3(tmp_path: Path) -> None:
    result = govern(
        "collect", "--table", "-h", "127.0.0.1", "-P", "1", "-u", "nobody", *base(tmp_path),
        "--once",
    )  # fmt: skip
    assert result.returncode == 3
    (line,) = result.stderr.splitlines()
    assert line.startswith("govern: error: cannot connect to nobody@127.0.0.1:1: ")


def test_performance_schema_off_is_named_with_the_fix(server: MariaDB, tmp_path: Path) -> None:
    result = govern(
        "collect", "--performance-schema", "--defaults-file",
        str(server.defaults_file("govern_admin")), *base(tmp_path), "--once",
    )  # fmt: skip
    assert result.returncode == 3
    assert result.stderr.splitlines() == [
        "govern: error: --performance-schema: performance_schema is OFF on this server (it is"
        " switched on only at start: performance_schema=ON in the server's my.cnf)"
    ]


def test_once_json_is_the_govern_collect_document(tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    data = (SLOWLOGS / "mariadb.log").read_bytes()
    log.write_bytes(data)
    past = time.time() - 60
    os.utime(log, (past, past))
    result = govern(
        "collect", str(log), *base(tmp_path), "--label", "db/1", "--bucket", "1m",
        "--close-after", "0", "--once", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert documented_fields("govern.collect") == set(document)
    assert documented_fields("govern.collect", "sources[]") == set(document["sources"][0])
    assert document["schema"] == "govern.collect"
    assert document["schema_version"] == 1
    assert document["host"] == "db/1"
    assert document["events"] == 5  # as govern digest: the server's start banner ends an event
    assert document["caught_up"] is True
    (source,) = document["sources"]
    assert source == {
        "key": f"file:{log}",
        "label": str(log),
        "events": 5,
        "bytes": len(data),
        "position": f"{log}@{len(data):,}",
        "behind": 0,
        "caught_up": True,
        "bucket": "2026-11-21 22:39:00",
    }
    assert [bucket["start"] for bucket in document["closed"]] == ["2026-11-21 22:39:00"]
    assert document["closed"][0]["file"].endswith("/db_1_2026-11-21T22-39-00.json")
    assert document["open"] == [] and document["problems"] == []
    bucket = json.loads(Path(document["closed"][0]["file"]).read_text())
    assert bucket["schema"] == "govern.digest"
    assert bucket["collect"] | {"collector": None} == {
        "host": "db/1",
        "bucket": {"start": "2026-11-21 22:39:00", "end": "2026-11-21 22:40:00", "seconds": 60},
        "closed": True,
        "collector": None,
    }
    assert oct(Path(document["closed"][0]["file"]).stat().st_mode & 0o777) == "0o600"
    again = govern(
        "collect", str(log), *base(tmp_path), "--label", "db/1", "--bucket", "1m", "--once",
        "--json",
    )  # fmt: skip
    assert json.loads(again.stdout)["events"] == 0  # the position was kept
    other = govern("collect", str(log), *base(tmp_path), "--label", "db/1", "--once")
    assert other.returncode == 2
    assert other.stderr.splitlines() == [
        "govern: error: collector 'db/1' has 60s buckets in this state file; keep --bucket 60s"
        " or use another --label"
    ]


def documented_fields(schema: str, row: str | None = None) -> set[str]:
    """The fields docs/json.md lists for ``schema`` (or, with ``row``, inside that row)."""
    import re

    text = (REPO / "docs" / "json.md").read_text()
    section = text.split(f"## `{schema}` version 1", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = line.split("|")
        if row is None:
            names.update(re.findall(r"`([a-z_0-9]+)(?:\[\])?`", cells[1]))
        elif f"`{row}`" in cells[1]:
            names.update(re.findall(r"`([a-z_0-9]+)`", cells[3]))
    return names


def test_the_service_finishes_its_poll_on_sigterm(tmp_path: Path) -> None:
    data = (SLOWLOGS / "mariadb.log").read_bytes()
    parts = records(data)
    events = one_shot(data)["totals"]["events"]
    log = tmp_path / "slow.log"
    log.write_bytes(parts[0])
    service = subprocess.Popen(
        [sys.executable, "-m", "govern", "collect", str(log), *base(tmp_path), "--settle", "0.2",
         "--interval", "0.2"],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        with log.open("ab") as handle:
            handle.write(b"".join(parts[1:]))
        deadline = time.monotonic() + 60
        state: Any = None
        while time.monotonic() < deadline:
            state = _committed_offset(tmp_path / "state.db")
            if state == len(data):
                break
            time.sleep(0.1)
        service.send_signal(signal.SIGTERM)
        _, err = service.communicate(timeout=60)
    finally:
        if service.poll() is None:
            service.kill()
    assert service.returncode == 0, err
    assert state == len(data)
    written = list((tmp_path / "buckets").glob("*.json"))
    assert sum(json.loads(p.read_text())["totals"]["events"] for p in written) == events
    assert "govern: collect: serving" in err
    assert "SIGTERM: finishing the running poll" in err
    assert "Traceback" not in err


def _committed_offset(state: Path) -> int | None:
    """How far the checkpoint says the log was read (what a restart would start from)."""
    import sqlite3

    if not state.exists():
        return None
    db = sqlite3.connect(state)
    try:
        rows = db.execute("SELECT state FROM collect_checkpoints").fetchall()
    except sqlite3.Error:
        return None
    finally:
        db.close()
    if not rows:
        return None
    (source,) = json.loads(rows[0][0])["sources"].values()
    return int(source["position"]["files"][-1]["offset"])
