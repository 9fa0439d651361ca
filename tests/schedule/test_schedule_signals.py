"""`govern schedule run` killed for real: SIGTERM ends the night cleanly; SIGKILL leaves no job
running, no lock held, and the next run marks the night interrupted."""

from __future__ import annotations

import json
import signal
import subprocess
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

HEAD = 'name = "crashy"\nkill_grace = "1s"\n'
JOBS = """
[jobs.long]
command = "echo $$ > long.pid; exec sleep 60"
[jobs.waits]
command = "true"
depends_on = ["long"]
"""


def _wait_for(path: Path) -> str:
    wait_until(lambda: path.exists() and bool(path.read_text().strip()))
    return path.read_text().strip()


def _start(path: Path, state_path: Path, cwd: Path) -> subprocess.Popen[str]:
    return govern_process(
        "schedule", "run", str(path), "--state", str(state_path), "--json", cwd=cwd
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_stops_the_night_and_its_jobs(
    server: MariaDB,
    tmp_path: Path,
    state_path: Path,
    signum: signal.Signals,
    write_catalog: WriteCatalog,
) -> None:
    path = write_catalog(HEAD + worker_table("main", server.defaults_file("govern_admin")) + JOBS)
    proc = _start(path, state_path, tmp_path)
    job_pid = int(_wait_for(tmp_path / "long.pid"))
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 1, err
    night = json.loads(out)
    jobs = {j["name"]: j for j in night["jobs"]}
    assert night["status"] == "interrupted"
    assert jobs["long"]["outcome"] == "interrupted"
    assert jobs["waits"]["outcome"] == "skipped"
    assert gone(job_pid, 2)


def test_sigkill_leaves_no_job_and_no_lock_behind(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(HEAD + worker_table("main", server.defaults_file("govern_admin")) + JOBS)
    proc = _start(path, state_path, tmp_path)
    job_pid = int(_wait_for(tmp_path / "long.pid"))
    proc.kill()
    proc.wait(timeout=10)
    assert gone(job_pid, 3)  # the parent-death signal reached the job
    assert last_night(state_path)["status"] == "running"  # nobody could say otherwise yet
    assert len(list((state_path.parent / "schedule-run").iterdir())) == 1  # its option files
    # the lock went with the connection: the next night starts, and reaps the dead one
    (tmp_path / "long.pid").unlink()
    quick = write_catalog(
        'name = "crashy"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.a]\ncommand = "true"\n',
        "quick.toml",
    )
    done = govern("schedule", "run", str(quick), "--state", str(state_path))
    assert done.returncode == 0, done.stderr
    assert "was left running: marked interrupted" in done.stderr
    # the killed scheduler's option files (passwords) were removed by the next night
    assert list((state_path.parent / "schedule-run").iterdir()) == []
    history = json.loads(
        govern(
            "schedule", "history", "crashy", "--state", str(state_path), "--json", check=True
        ).stdout
    )
    statuses = [n["status"] for n in history["nights"]]
    assert statuses == ["ok", "interrupted"]
    dead = history["nights"][1]
    assert {j["name"]: j["outcome"] for j in dead["jobs"]} == {
        "long": "interrupted",
        "waits": "interrupted",
    }
    assert dead["jobs"][0]["attempts"][0]["outcome"] == "interrupted"
