"""The nightly example on one server, with another application at work meanwhile.

    python3 examples/nightly/demo.py --defaults-file admin.cnf --slow-log /path/slow.log
        [--rows 200000] [--types 96] [--state DIR]

The server plays the primary and both replicas. It loads a day of events (load.py),
switches the slow log on with ``long_query_time = 0.2``, and runs one night of the
catalog (summaries.toml: every summary under ``govern run`` in session mode) while
another client opens a new connection every moment and runs a 0.25 s statement on it.
Then it checks the slow log: every one of the other client's statements must be there
(a global toggle or a raised threshold would have hidden the ones whose connection
opened during a job). Exit 0 when all are, 1 when any is missing. ``scripts/demo``
runs it on a throwaway MariaDB; it changes the server's slow-log settings, so point it
at a server of yours only if that is fine.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from govern.connection import connect, resolve_settings

HERE = Path(__file__).resolve().parent


class OtherClient(threading.Thread):
    """Another application: a new connection each time, one slow statement on it."""

    def __init__(self, cnf: str) -> None:
        super().__init__(daemon=True)
        self.settings = resolve_settings(defaults_file=cnf)
        self.markers: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            text = f"other-client-{uuid.uuid4().hex[:12]}"
            conn = connect(self.settings)
            with conn.cursor() as cur:
                cur.execute(f"SELECT SLEEP(0.25), '{text}'")
            conn.close()
            self.markers.append(text)


def catalog(cnf: str, folder: Path) -> Path:
    """summaries.toml with every server pointed at ``cnf`` and the scripts by full path."""
    text = (HERE / "summaries.toml").read_text()
    for name in ("primary.cnf", "replica1.cnf", "replica2.cnf"):
        text = text.replace(f'"{name}"', f'"{cnf}"')
    for script in ("job.sh", "totals.sh"):
        text = text.replace(f'"./{script}"', f'"{HERE / script}"')
    path = folder / "summaries.toml"
    path.write_text(text)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--defaults-file", required=True, help="an account that may SET GLOBAL")
    parser.add_argument("--slow-log", required=True, type=Path, help="the server's slow log")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--types", type=int, default=96)
    parser.add_argument("--state", type=Path, help="where the state file goes [a temp dir]")
    args = parser.parse_args()
    cnf = str(Path(args.defaults_file).resolve())
    folder = args.state or Path(tempfile.mkdtemp(prefix="govern-nightly-"))
    subprocess.run(
        [sys.executable, str(HERE / "load.py"), "--defaults-file", cnf, "--rows", str(args.rows),
         "--types", str(args.types)],
        check=True,
    )  # fmt: skip
    admin: Any = connect(resolve_settings(defaults_file=cnf))
    with admin.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute("SET GLOBAL slow_query_log = ON")
        cur.execute("SET GLOBAL long_query_time = 0.2")
    other = OtherClient(cnf)
    other.start()
    try:
        night = subprocess.run(
            [sys.executable, "-m", "govern", "schedule", "run", str(catalog(cnf, folder)),
             "--state", str(folder / "state.db")],
            check=False,
        )  # fmt: skip
    finally:
        other.stop.set()
        other.join()
    time.sleep(0.5)  # a log entry can land just after the client has its result
    with admin.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.long_query_time, @@GLOBAL.slow_query_log")
        threshold, switch = cur.fetchone()
    log = args.slow_log.read_text(errors="replace")
    missing = [m for m in other.markers if m not in log]
    print(
        f"another client ran {len(other.markers)} statements of 0.25 s during the night:"
        f" {len(other.markers) - len(missing)} logged, {len(missing)} missing"
        f" (long_query_time {threshold:g} s, slow log {'ON' if switch else 'OFF'} after it)"
    )
    return 1 if missing or night.returncode != 0 or not other.markers else 0


if __name__ == "__main__":
    sys.exit(main())
