"""How fast the slow log comes back when ``govern run`` is killed, next to the toggle script.

    .venv/bin/python benchmarks/restore_latency.py [--runs 5] [--server-dir DIR]

On a throwaway MariaDB (tests/harness.py), for each layer, ``--runs`` times:

* ``kill -9`` of the wrapper: the watchdog restores;
* ``kill -9`` of the wrapper and its watchdog, event scheduler ON, lease 2 s: the
  server-side event restores (deadline: lease + 3 s slack, then the scheduler's delay);
* the reference, the DBA's toggle script (``SET GLOBAL slow_query_log = OFF; job;
  SET GLOBAL slow_query_log = ON``) killed the same way: never restored (the script
  reports how long it waited).

Prints the median and worst time from the kill to ``slow_query_log = ON``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.harness

from tests.harness import MariaDB  # noqa: E402

GIVE_UP_S = 20.0


def slow_log_on(root: object) -> bool:
    with root.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute("SELECT @@GLOBAL.slow_query_log")
        return bool(cur.fetchone()[0])


def wait(predicate: object, timeout: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if predicate():  # type: ignore[operator]
            return time.monotonic() - started
        time.sleep(0.01)
    return None


def one(server: MariaDB, root: object, work: Path, layer: str) -> float | None:
    cnf = server.defaults_file("govern_admin", tcp=False)
    if layer == "toggle script (reference)":
        script = (
            f"mariadb --defaults-file={cnf} -e 'SET GLOBAL slow_query_log = OFF'; sleep 60; "
            f"mariadb --defaults-file={cnf} -e 'SET GLOBAL slow_query_log = ON'"
        )
        proc = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    else:
        lease = "2" if "event" in layer else "60"
        proc = subprocess.Popen(
            [sys.executable, "-m", "govern", "run", "-q", "--mode", "global", "--lease", lease,
             "--defaults-file", str(cnf), "--state", str(work / "state.db"), "--", "sleep", "60"],
            start_new_session=True,
            stderr=subprocess.DEVNULL,  # later runs report repairing the killed ones
        )  # fmt: skip
    assert wait(lambda: not slow_log_on(root), 20) is not None, "the run never started"
    time.sleep(0.2)
    children = children_of(proc.pid)  # govern: the job's group and the watchdog's session
    if "event" in layer:
        for pid, (_, session) in children.items():
            if session == pid:
                os.kill(pid, signal.SIGKILL)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    took = wait(lambda: slow_log_on(root), GIVE_UP_S)
    for group in {proc.pid} | {pgid for pgid, _ in children.values()}:  # orphaned jobs
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    with root.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute("SET GLOBAL slow_query_log = ON")
    return took


def children_of(parent: int) -> dict[int, tuple[int, int]]:
    """pid → (process group, session) of ``parent``'s children."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == parent:
                found[int(entry)] = (int(stat[2]), int(stat[3]))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--server-dir", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="govern-bench-restore-"))
    server = MariaDB(args.server_dir or work / "server")
    server.start()
    root = server.connect()
    try:
        with root.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SET GLOBAL slow_query_log = ON, GLOBAL event_scheduler = ON")
        layers = (
            "watchdog (kill -9 of the wrapper)",
            "event (kill -9 of wrapper and watchdog, lease 2 s)",
            "toggle script (reference)",
        )
        print(
            f"kill -9 to slow_query_log = ON, {args.runs} runs each; gave up after {GIVE_UP_S:g} s"
        )
        for layer in layers:
            times = [one(server, root, work, layer) for _ in range(args.runs)]
            done = [t for t in times if t is not None]
            if not done:
                print(f"{layer:52} never restored ({len(times)} of {len(times)})")
                continue
            print(
                f"{layer:52} median {statistics.median(done) * 1000:8.0f} ms,"
                f" worst {max(done) * 1000:8.0f} ms, never: {len(times) - len(done)}"
            )
        with root.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SET GLOBAL event_scheduler = OFF")
    finally:
        root.close()  # type: ignore[attr-defined]
        if args.server_dir is None:
            server.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
