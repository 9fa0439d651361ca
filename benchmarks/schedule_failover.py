"""serve on two hosts: how fast the standby takes over a night, and whether any job runs twice.

    .venv/bin/python benchmarks/schedule_failover.py [--rounds 3] [--leases 1,2,5] [--jobs 8]

Starts a throwaway MariaDB (tests/harness.py) as the primary and the worker. Per lease and
round: two `govern schedule serve` processes with their own state stores ("hosts" A and B),
a catalog of --jobs jobs that each sleep 0.5 s and insert their row in a summary table on
the primary; A owes a night and starts it, B is the standby; A is SIGKILLed after a random
number of jobs ended. Prints per lease the takeover time (SIGKILL to B's "active" line), the
gap until B started the first job again, and the jobs that ran twice (rows in the summary
table beyond one per job). The server is destroyed at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.harness

from govern.schedulers.history import History  # noqa: E402
from govern.state import StateStore  # noqa: E402
from tests.harness import MariaDB  # noqa: E402

SUMMARY = "app.failover_summary"
JOB = f"""#!/bin/sh
sleep 0.5
exec "$(command -v mariadb || command -v mysql)" --defaults-file="$GOVERN_PRIMARY_CNF" \\
  -e "INSERT INTO {SUMMARY} (night, job) VALUES ('$GOVERN_SCHEDULED_FOR', '$GOVERN_JOB')"
"""


def query(conn: Any, sql: str) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def wait(condition: Any, timeout: float = 60) -> float:
    """Seconds until ``condition()`` held (polled every 10 ms)."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise SystemExit("benchmark: timed out")
        time.sleep(0.01)
    return time.monotonic()


def serve(folder: Path, catalog: Path, host: str) -> subprocess.Popen[bytes]:
    log = open(folder / f"{host}.log", "wb")  # noqa: SIM115 - the child keeps it
    state = folder / host / "state.db"
    args = [
        sys.executable,
        "-m",
        "govern",
        "schedule",
        "serve",
        str(catalog),
        "--state",
        str(state),
    ]
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=folder)


def one_round(
    server: MariaDB, conn: Any, folder: Path, lease: float, jobs: int
) -> dict[str, float]:
    folder.mkdir(parents=True)
    (folder / "job.sh").write_text(JOB)
    (folder / "job.sh").chmod(0o755)
    catalog = folder / "failover.toml"
    catalog.write_text(
        f'name = "failover"\npolicy = "fifo"\nkill_grace = "1s"\n[schedule]\ncron = "0 1 * * *"\n'
        f'timezone = "UTC"\nmisfire_grace = "1h"\nlease = "{lease:g}s"\n'
        f'[primary]\ndefaults_file = "{server.defaults_file("govern_admin")}"\n'
        f'[workers.main]\ndefaults_file = "{server.defaults_file("govern_admin")}"\n'
        + "".join(f'[jobs.j{i:02d}]\ncommand = ["./job.sh"]\n' for i in range(jobs))
    )
    owed = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
    with StateStore.open(folder / "A" / "state.db") as store:
        History(store).remember_fire("failover", "cron 0 1 * * * UTC", owed)
    ledger = "SELECT COUNT(*) FROM govern.schedule_ledger WHERE schedule = 'failover'"
    a = serve(folder, catalog, "A")
    b = None
    try:
        wait(lambda: b"night of failover" in (folder / "A.log").read_bytes())
        b = serve(folder, catalog, "B")
        wait(lambda: b"standby for failover" in (folder / "B.log").read_bytes())
        ended = random.randint(1, jobs - 2)
        wait(lambda: query(conn, ledger + f" AND night = '{owed}' AND state = 'ok'")[0][0] >= ended)
        a.kill()
        killed = time.monotonic()
        active = wait(lambda: b"active for failover" in (folder / "B.log").read_bytes())
        restarted = wait(lambda: b"started on main" in (folder / "B.log").read_bytes())
        wait(
            lambda: (
                query(conn, ledger + f" AND night = '{owed}' AND job = '' AND state <> 'running'")[
                    0
                ][0]
                == 1
            )
        )
    finally:
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=60)
    rows = query(
        conn, f"SELECT COUNT(*), COUNT(DISTINCT job) FROM {SUMMARY} WHERE night = '{owed}'"
    )
    return {
        "takeover": active - killed,
        "first_job": restarted - killed,
        "twice": float(rows[0][0] - rows[0][1]),
        "missing": float(jobs - rows[0][1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--leases", default="1,2,5")
    parser.add_argument("--jobs", type=int, default=8)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="govern-failover-"))
    server = MariaDB(base / "server")
    try:
        server.start()
        conn = server.connect("root")  # type: ignore[attr-defined]
        query(conn, f"CREATE TABLE IF NOT EXISTS {SUMMARY} (night VARCHAR(64), job VARCHAR(64))")
        print(
            f"{'lease':>6} {'rounds':>6} {'takeover s (min/median/max)':>30} {'to first job s':>16}"
            f" {'ran twice':>9} {'missing':>7}"
        )
        for lease in (float(x) for x in args.leases.split(",")):
            results = [
                one_round(server, conn, base / f"lease{lease:g}-{i}", lease, args.jobs)
                for i in range(args.rounds)
            ]
            takeover = [r["takeover"] for r in results]
            first = [r["first_job"] for r in results]
            print(
                f"{lease:>5g}s {len(results):>6} "
                f"{min(takeover):>9.3f} {statistics.median(takeover):>9.3f} {max(takeover):>9.3f}"
                f"  {statistics.median(first):>15.3f} {sum(r['twice'] for r in results):>9.0f}"
                f" {sum(r['missing'] for r in results):>7.0f}"
            )
        print(f"machine: load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        server.destroy()


if __name__ == "__main__":
    main()
