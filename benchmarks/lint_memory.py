"""govern lint's peak memory and speed as the file grows: flat RSS means streamed.

Writes files of about 10 MB, 100 MB and 1 GB (deterministic; the statement mix of
benchmarks/lint_speed.py without its stored procedures, whose BATCH007 findings are output
that a report must keep), runs ``govern lint --format json`` on each in a new process as a
user would, and prints the peak RSS (the process's ru_maxrss) and statements per second.

    .venv/bin/python benchmarks/lint_memory.py [--sizes 10,100,1000] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_speed import mixed_statement


def write_input(path: Path, megabytes: int) -> None:
    """About ``megabytes`` MB of statements; the same bytes every time."""
    r = random.Random(20261125)
    block = []
    while sum(len(s) for s in block) < 1_000_000:
        statement = mixed_statement(r)
        if not statement.startswith("CREATE PROCEDURE"):
            block.append(statement + "\n")
    text = "".join(block)
    with path.open("w") as handle:
        for _ in range(megabytes):
            handle.write(text)


def run(path: Path) -> tuple[float, int, int]:
    """(seconds, peak RSS in KiB, statements) of one govern lint."""
    govern = shutil.which("govern", path=str(Path(sys.executable).parent)) or "govern"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [govern, "lint", str(path), "--format", "json", "--target", "mariadb-10.11"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    return seconds, usage.ru_maxrss, json.loads(out)["statements"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000", help="file sizes in MB")
    parser.add_argument("--dir", default=None, help="where to write the inputs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(
            f"{'file':>8} {'statements':>12} {'seconds':>9} {'statements/s':>13} {'peak RSS':>10}"
        )
        for size in (int(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"mixed-{size}MB.sql"
            write_input(path, size)
            seconds, rss, statements = run(path)
            print(
                f"{size:>6}MB {statements:>12,} {seconds:>9.1f} {statements / seconds:>13,.0f} "
                f"{rss / 1024:>8.0f} MiB",
                flush=True,
            )
            path.unlink()


if __name__ == "__main__":
    main()
