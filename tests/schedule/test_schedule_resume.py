"""`govern schedule run --resume | --only-failed | --job | --date | --dry-run`: a night killed
for real goes on where it stopped, in the same record, and nothing that ended ok runs again."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.harness import MariaDB
from tests.schedule.support import (
    WriteCatalog,
    gone,
    govern,
    govern_process,
    last_night,
    wait_until,
    worker_table,
)

pytestmark = pytest.mark.server

#: Every job says when it starts and when it ends ok in ran.log, one line each.
LOG = 'echo "$GOVERN_JOB start" >> ran.log'
DONE = 'echo "$GOVERN_JOB done" >> ran.log'
NIGHT = f"""
[jobs.a]
command = '{LOG}; {DONE}'
rows = 1
[jobs.b]
command = '{LOG}; {DONE}'
rows = 2
[jobs.long]
command = '{LOG}; if [ ! -e long.once ]; then touch long.once; echo $$ > long.pid; exec sleep 60; fi; {DONE}'
rows = 100
depends_on = ["a", "b"]
[jobs.after]
command = '{LOG}; {DONE}'
rows = 3
depends_on = ["long"]
"""


def _ran(folder: Path) -> list[str]:
    path = folder / "ran.log"
    return path.read_text().split("\n")[:-1] if path.exists() else []


def _catalog(write_catalog: WriteCatalog, server: MariaDB, body: str, name: str = "resumy") -> Path:
    head = f'name = "{name}"\npolicy = "sjf"\nkill_grace = "1s"\n'
    return write_catalog(head + worker_table("main", server.defaults_file("govern_admin")) + body)


def _run(path: Path, state_path: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return govern("schedule", "run", str(path), "--state", str(state_path), *args, cwd=cwd)


def test_resume_after_kill_9_runs_only_what_the_night_left(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = _catalog(write_catalog, server, NIGHT)
    proc = govern_process("schedule", "run", str(path), "--state", str(state_path), cwd=tmp_path)
    wait_until(
        lambda: (tmp_path / "long.pid").exists() and bool((tmp_path / "long.pid").read_text())
    )
    job_pid = int((tmp_path / "long.pid").read_text())
    proc.kill()  # kill -9 of the scheduler mid-night
    proc.wait(timeout=10)
    assert gone(job_pid, 3)
    killed = last_night(state_path)
    assert killed["status"] == "running"  # nobody could say otherwise yet

    dry = _run(path, state_path, tmp_path, "--resume", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert [j["name"] for j in json.loads(dry.stdout)["jobs"]] == ["long", "after"]
    assert last_night(state_path)["status"] == "running"  # the dry run changed nothing

    done = _run(path, state_path, tmp_path, "--resume", "--json")
    assert done.returncode == 0, done.stderr
    night = json.loads(done.stdout)
    assert night["id"] == killed["id"]  # the same night goes on, not a new one
    assert night["status"] == "ok"
    assert night["note"].startswith("--resume at ")
    jobs = {j["name"]: j for j in night["jobs"]}
    assert {n: j["outcome"] for n, j in jobs.items()} == dict.fromkeys(jobs, "ok")
    assert [a["outcome"] for a in jobs["long"]["attempts"]] == ["interrupted", "ok"]
    assert len(jobs["a"]["attempts"]) == len(jobs["b"]["attempts"]) == 1
    # the resumed night's clock goes on from its first start: 'long' starts again later
    assert jobs["long"]["attempts"][1]["start_s"] > jobs["b"]["finish_s"]
    ran = _ran(tmp_path)
    for job in ("a", "b", "after"):  # ok once, never again
        assert ran.count(f"{job} start") == ran.count(f"{job} done") == 1, ran
    assert ran.count("long start") == 2 and ran.count("long done") == 1, ran
    assert night["summary"]["jobs"] == 4 and night["summary"]["outcomes"] == {"ok": 4}

    again = _run(path, state_path, tmp_path, "--resume")
    assert again.returncode == 2
    assert again.stderr.strip() == (
        f"govern: error: --resume: night {night['id']} of 'resumy' ended ok: nothing to run"
    )


def test_only_failed_runs_failed_jobs_and_their_dependents_again(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    body = f"""
    [jobs.fine]
    command = '{LOG}; {DONE}'
    [jobs.flaky]
    command = '{LOG}; test -e fixed && {DONE}'
    [jobs.needs_flaky]
    command = '{LOG}; {DONE}'
    depends_on = ["flaky"]
    """
    path = _catalog(write_catalog, server, body.replace("\n    ", "\n"))
    first = _run(path, state_path, tmp_path, "--json")
    assert first.returncode == 1
    failed = json.loads(first.stdout)
    outcomes = {j["name"]: j["outcome"] for j in failed["jobs"]}
    assert outcomes == {"fine": "ok", "flaky": "failed", "needs_flaky": "skipped"}

    refused = _run(path, state_path, tmp_path, "--resume")
    assert refused.returncode == 2
    assert "was not interrupted (it ended failed): --only-failed" in refused.stderr

    (tmp_path / "fixed").touch()
    second = _run(path, state_path, tmp_path, "--only-failed", "--json")
    assert second.returncode == 0, second.stderr
    night = json.loads(second.stdout)
    assert night["id"] == failed["id"] and night["status"] == "ok"
    assert {j["name"]: len(j["attempts"]) for j in night["jobs"]} == {
        "fine": 1,
        "flaky": 2,
        "needs_flaky": 1,
    }
    ran = _ran(tmp_path)
    assert ran.count("fine start") == 1 and ran.count("flaky start") == 2, ran


def test_date_fills_the_sizing_query_and_the_jobs(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    body = """
    [sizing]
    query = "SELECT CONCAT('d', DATE_FORMAT(DATE('{date}') - INTERVAL 1 DAY, '%Y%m%d')), 7"
    [each.summary]
    command = 'echo "{key} {date} $GOVERN_DATE" >> dates.log'
    """
    path = _catalog(write_catalog, server, body.replace("\n    ", "\n"))
    done = _run(path, state_path, tmp_path, "--date", "2026-03-01", "--json")
    assert done.returncode == 0, done.stderr
    night = json.loads(done.stdout)
    assert night["date"] == "2026-03-01"
    assert [j["name"] for j in night["jobs"]] == ["summary.d20260228"]
    assert (tmp_path / "dates.log").read_text() == "d20260228 2026-03-01 2026-03-01\n"

    today = _run(path, state_path, tmp_path, "--json")
    now = datetime.now().astimezone().date()
    assert json.loads(today.stdout)["date"] == now.isoformat()
    plan = govern("schedule", "plan", str(path), "--state", str(state_path), "--json", cwd=tmp_path)
    yesterday = (now - timedelta(days=1)).strftime("%Y%m%d")
    assert [j["name"] for j in json.loads(plan.stdout)["jobs"]] == [f"summary.d{yesterday}"]

    for bad, why in (("2026-02-30", "day is out of range for month"), ("yesterday", "YYYY-MM-DD")):
        refused = _run(path, state_path, tmp_path, "--date", bad)
        assert refused.returncode == 2
        assert refused.stderr.startswith(f"govern: error: --date {bad}: ")
        assert why in refused.stderr and "Traceback" not in refused.stderr


def test_dry_run_and_job_globs_start_nothing_and_record_nothing(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = _catalog(write_catalog, server, NIGHT.replace("exec sleep 60", "true"))
    dry = _run(path, state_path, tmp_path, "--dry-run", "--job", "lo*", "--job", "after")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith("dry run, nothing started: a new night would run for ")
    assert "2 jobs" in dry.stdout.splitlines()[0]
    assert "2 dependencies outside --job taken as done: a, b" in dry.stderr
    plan = json.loads(_run(path, state_path, tmp_path, "--dry-run", "--json").stdout)
    assert plan["schema"] == "govern.schedule.plan"
    assert [j["name"] for j in plan["jobs"]] == ["a", "b", "long", "after"]  # sjf, dependencies
    assert _ran(tmp_path) == []
    assert not state_path.exists() or not _nights(state_path)

    only = _run(path, state_path, tmp_path, "--job", "b", "--json")
    assert only.returncode == 0, only.stderr
    assert [j["name"] for j in json.loads(only.stdout)["jobs"]] == ["b"]
    assert _ran(tmp_path) == ["b start", "b done"]
    none = _run(path, state_path, tmp_path, "--job", "nope*")
    assert none.returncode == 2
    assert none.stderr.strip() == "govern: error: --job nope*: no job of tonight's catalog matches"


def _nights(state_path: Path) -> list[int]:
    from govern.schedulers.history import History
    from govern.state import StateStore

    with StateStore.open(state_path) as store:
        return History(store).night_ids()
