"""A job's whole process group ends with the scheduler, even one killed with SIGKILL.

The parent-death signal reaches only the group's leader; a shell line's children used to
run on after the scheduler died, and a standby taking the night over ran the job again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

OWNER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from govern.schedulers.launch import Process
    d = Path(sys.argv[1])
    line = f"sleep 300 & echo $! > {d}/grandchild; wait"
    with open(d / "job.log", "wb") as log:
        Process(["sh", "-c", line], {"PATH": "/usr/bin:/bin"}, d, None, log)
        print("started", flush=True)
        time.sleep(300)
    """
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has ended: nobody reaped it yet


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_sigkilled_scheduler_ends_the_children_of_a_shell_job(tmp_path: Path) -> None:
    owner_script = tmp_path / "owner.py"
    owner_script.write_text(OWNER)
    owner = subprocess.Popen(
        [sys.executable, str(owner_script), str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "started"
        pidfile = tmp_path / "grandchild"
        deadline = time.monotonic() + 10
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert time.monotonic() < deadline, "the job never started its child"
            time.sleep(0.02)
        grandchild = int(pidfile.read_text())
        assert _alive(grandchild)
    finally:
        owner.kill()
        owner.wait()
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(grandchild)
    if alive:
        os.kill(grandchild, 9)
    assert not alive, "the shell job's child outlived the SIGKILLed scheduler"


def test_the_job_keeps_its_exit_status_and_stdin(tmp_path: Path) -> None:
    from govern.schedulers.launch import Process

    stdin = tmp_path / "job.sql"
    stdin.write_text("SELECT 1;\n")
    log_path = tmp_path / "job.log"
    with open(log_path, "wb") as log:
        process = Process(
            ["sh", "-c", "cat; exit 7"], {"PATH": "/usr/bin:/bin"}, tmp_path, stdin, log
        )
        process.popen.wait(timeout=10)
    assert process.poll() == 7
    assert log_path.read_text() == "SELECT 1;\n"
    with open(log_path, "wb") as log:
        killed = Process(["sh", "-c", "kill -9 $$"], {"PATH": "/usr/bin:/bin"}, tmp_path, None, log)
        killed.popen.wait(timeout=10)
    assert killed.poll() == 128 + 9


def test_a_job_that_handles_term_ends_with_its_own_status(tmp_path: Path) -> None:
    from govern.schedulers.launch import Process

    with open(tmp_path / "job.log", "wb") as log:
        process = Process(
            ["sh", "-c", 'trap "exit 3" TERM; sleep 30 & wait'],
            {"PATH": "/usr/bin:/bin"},
            tmp_path,
            None,
            log,
        )
        time.sleep(0.5)
        process.terminate()
        process.popen.wait(timeout=10)
    assert process.poll() == 3
