#!/usr/bin/env python3
"""Time the fleet report and the regression check over a store, as a user runs them.

    python3 benchmarks/fleet_queries.py --store URL --server-dir /work/fleet-srv [--days 2026-11-20:2026-11-27]

Each command runs as its own process (``python -m govern …``, output to /dev/null); printed
per command: wall time, the CPU seconds of the command (its process) and, for a MariaDB store
of a harness server (--server-dir), of the server (mariadbd's utime + stime over the run),
the load average before it, the exit code and the output's size. The machine is shared:
CPU seconds say what the work costs, wall time only "at load X".

Commands: ``govern digest --store URL --since 7d`` (--since) (whole fleet, then ``--host 'db0*'``),
the same over whole days (``--since DAY --until DAY``: roll-ups only), and ``govern
regressions --store URL --baseline 7d --window 24h``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path


def server_cpu(pid: int | None) -> float:
    """mariadbd's CPU seconds so far (0 without a pid)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(label: str, argv: list[str], pid: int | None, out: Path | None) -> None:
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server = server_cpu(pid)
    began = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=sink, check=False)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    server = server_cpu(pid) - server
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / (re.sub(r"[^\w.-]+", "_", label) + ".txt")).write_bytes(result.stdout)
    print(
        f"{label}: {wall:.1f} s wall at load {load:.1f}, {cpu:.1f} CPU-s govern"
        + (f" + {server:.1f} CPU-s mariadbd" if pid else "")
        + f", exit {result.returncode}, {len(result.stdout):,} bytes out",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--server-dir", help="a tests/harness.py server's dir: its CPU too")
    parser.add_argument("--days", help="FIRST:END whole days for --since/--until (END excluded)")
    parser.add_argument("--glob", default="db0*")
    parser.add_argument("--out", type=Path, help="a folder to keep each command's output in")
    parser.add_argument("--since", default="7d", help="the report's --since (a duration)")
    parser.add_argument(
        "--until", help="pin 'now' (a time) for --since and the regression check: comparable runs"
    )
    parser.add_argument(
        "--only", help="comma-separated labels to run (digest, glob, days, days-glob, regressions)"
    )
    args = parser.parse_args()
    pid = None
    if args.server_dir:
        pid = int(Path(args.server_dir, "run", "mariadb.pid").read_text().strip())
    govern = [sys.executable, "-m", "govern"]
    store = ["--store", args.store]
    pinned = ["--until", args.until] if args.until else []
    if args.until and args.since[-1:] in ("d", "h"):
        # A duration counts back from the real now, so pin the start too.
        start = dt.datetime.fromisoformat(args.until) - dt.timedelta(
            **{"days" if args.since.endswith("d") else "hours": int(args.since[:-1])}
        )
        args.since = start.strftime("%Y-%m-%d %H:%M:%S")
    plan = [
        ("digest", f"digest --since {args.since}", [*govern, "digest", *store, "--since", args.since, *pinned]),
        ("glob", f"digest --since {args.since} --host '{args.glob}'",
         [*govern, "digest", *store, "--since", args.since, *pinned, "--host", args.glob]),
    ]  # fmt: skip
    if args.days:
        first, end = args.days.split(":")
        whole = ["--since", first, "--until", end]
        plan += [
            ("days", f"digest --since {first} --until {end}", [*govern, "digest", *store, *whole]),
            ("days-glob", f"digest --since {first} --until {end} --host '{args.glob}'",
             [*govern, "digest", *store, *whole, "--host", args.glob]),
        ]  # fmt: skip
    plan.append(
        ("regressions", "regressions --baseline 7d --window 24h",
         [*govern, "regressions", *store, "--baseline", "7d", "--window", "24h", *pinned]),
    )  # fmt: skip
    wanted = set(args.only.split(",")) if args.only else None
    print(
        f"store {args.store}; {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    for key, label, argv in plan:
        if wanted is None or key in wanted:
            run(label, argv, pid, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
