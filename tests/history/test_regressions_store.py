"""`govern regressions` over a SQLite history store of generated buckets: per host and
fleet-wide, every output format, the exit codes, the JSON contract."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from govern.digest.document import full_document
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_bytes
from govern.history.regressions import Rules, find_regressions
from govern.history.store import open_store
from tests.history.generated import CHANGED, UNTIL, fill, hour_log


def govern(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "govern", *args], capture_output=True, text=True)


def test_a_class_slowed_on_one_host_names_that_host_and_the_hour(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    fill(path, slowed={"db2"})
    store = open_store(f"sqlite:{path}")
    try:
        outcome = find_regressions(
            store, baseline=timedelta(days=7), window=timedelta(hours=24), until=UNTIL
        )
    finally:
        store.close()
    assert outcome.hosts == ["db1", "db2"]
    assert (outcome.baseline.hours, outcome.window.hours) == (6, 8)
    (on_host,) = outcome.per_host
    assert on_host.host == "db2"
    assert on_host.fingerprint == "select sum(amount) from orders where customer = ?"
    # p99 is not judged: 180 baseline and 240 window events, under its floor of 500
    assert on_host.kinds == ["p95", "total_time"]
    assert on_host.changed_at == CHANGED
    # fleet-wide the class regressed too (db2's half dominates it), and names db2
    (fleet,) = outcome.fleet
    assert (fleet.host, fleet.hosts, fleet.id) == (None, ["db2"], on_host.id)
    assert fleet.changed_at == CHANGED


def test_the_cli_formats_and_exit_codes(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    fill(path, slowed={"db1"}, new_on={"db1"})
    args = ["regressions", "--store", f"sqlite:{path}", "--until", f"{UNTIL:%Y-%m-%d %H:%M}"]
    text = govern(*args)
    assert text.returncode == 1, text.stderr
    assert "2 regressions, 2 fleet-wide on db1, db2" in text.stdout
    assert (
        "db1  " in text.stdout
        and "fleet (db1)  " in text.stdout
        and f"since {CHANGED:%Y-%m-%d %H:%M}" in text.stdout
    )
    document = json.loads(govern(*args, "--format", "json").stdout)
    assert document["schema"] == "govern.regressions"
    assert document["counts"] == {
        "regressions": 2, "fleet": 2, "new": 1, "p95": 1, "p99": 0, "total_time": 1, "plan": 0
    }  # fmt: skip
    new = next(r for r in document["regressions"] if r["kinds"] == ["new"])
    assert (new["host"], new["changed_at"]) == ("db1", f"{CHANGED:%Y-%m-%d %H:%M:%S}")
    markdown = govern(*args, "--format", "md").stdout
    assert markdown.startswith("## Query regressions\n")
    assert "| db1 | `" in markdown
    # only db2: nothing regressed there
    quiet = govern(*args, "--host", "db2")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert "no regression on db2" in quiet.stdout
    # a higher bar: the slower class (×20) is not reported, the new one still is
    assert govern(*args, "--factor", "50").returncode == 1


@pytest.mark.parametrize(
    ("arguments", "code", "message"),
    [
        (["--store", "sqlite:MISSING"], 3, "--store sqlite:MISSING: no store at MISSING (govern collect --store writes it)"),
        (["--baseline", "soon"], 2, "--baseline: expected a duration like 90, 90s, 15m, 1h30m or 500ms, got 'soon'"),
        (["--window", "0"], 2, "--window 0: must be above 0"),
        (["--min-time", "x"], 2, "--min-time: expected a duration like 90, 90s, 15m, 1h30m or 500ms, got 'x'"),
        (["--until", "yesterday"], 2, "--until 'yesterday': expected YYYY-MM-DD[ HH:MM[:SS]], YYMMDD HH:MM:SS or a duration like 30m, 2h, 7d"),
    ],
)  # fmt: skip
def test_mistakes_give_one_line(
    tmp_path: Path, arguments: list[str], code: int, message: str
) -> None:
    missing = str(tmp_path / "missing.db")
    given = [a.replace("MISSING", missing) for a in arguments]
    done = govern("regressions", *given)
    assert done.returncode == code, done.stderr
    assert done.stderr.splitlines() == [f"govern: error: {message.replace('MISSING', missing)}"]


def test_an_empty_window_says_so_and_finds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    fill(path, slowed=set())
    done = govern("regressions", "--store", f"sqlite:{path}", "--until", "2020-01-01")
    assert done.returncode == 0
    assert "no bucket between 2019-12-24 00:00 and 2020-01-01 00:00" in done.stderr


def test_rules_are_the_documented_defaults() -> None:
    assert Rules() == Rules(factor=2.0, min_count=20, min_time=0.010)


def test_a_host_without_a_baseline_is_named_not_judged(tmp_path: Path) -> None:
    """A collector started yesterday: every class of its window would be new."""
    path = tmp_path / "history.db"
    fill(path, slowed=set())
    store = open_store(f"sqlite:{path}")
    try:
        at = UNTIL - timedelta(hours=2)
        log = hour_log(at, {"SELECT 1": 0.001})
        document = full_document(digest_bytes(log, DigestOptions(host="db3")))
        store.write(
            "db3", f"{at:%Y-%m-%d %H:%M:%S}", json.loads(json.dumps(document, default=list))
        )
        outcome = find_regressions(
            store, baseline=timedelta(days=7), window=timedelta(hours=24), until=UNTIL
        )
    finally:
        store.close()
    assert outcome.hosts == ["db1", "db2", "db3"]
    assert outcome.not_judged == {"db3": "no bucket in the baseline"}
    assert outcome.regressions == []
