#!/usr/bin/env python3
"""`govern collect` following a log that grows at 50 MB/s, beside `govern digest` of the same bytes.

    python3 benchmarks/collect_follow.py                          # 50 MB/s for 30 s
    python3 benchmarks/collect_follow.py --rate 100M --seconds 20 --log big.log

A writer appends a real log (the lab's scaler grows the shared MariaDB corpus log to the size
needed; --log gives one) to a fresh file at --rate, in pieces cut anywhere, every 100 ms,
while `govern collect LOG` follows it as a service (--interval, 30 s by default). When the
writer stops, the benchmark waits until the collector's checkpoint has the whole file, stops it
with SIGTERM and takes its CPU time (user + system, from wait4). The log's own clock is days
behind the machine's, so --close-after is set far out: a bucket closes when the log moves past
it, as on a live server, not at every poll (an old log replayed this fast would close one
bucket per poll by the idle rule). Then `govern digest --no-rules --format json` and the
library digest (`digest_paths`, no report) digest the same file once each, as files.

Printed: bytes written and the rate reached; the collector's CPU seconds, and per second of
writing (cores); the digests' CPU seconds; the collector's extra cost over a digest of the
same bytes, in cores at --rate (the extra CPU per byte times the bytes a second; the target is
at most 0.1); how long after the last write the collector had everything (up to one interval
of it is waiting for the next poll). CPU time, not wall time, is the measure: the machine is
shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from govern.units import parse_size

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CACHE = REPO / ".tmp" / "bench"


def source_log(size: int, given: str | None) -> Path:
    """A real log of at least ``size`` bytes: the one given, or the corpus grown by the lab's
    scaler (kept in .tmp/bench for the next run)."""
    if given:
        return Path(given)
    CACHE.mkdir(parents=True, exist_ok=True)
    target = CACHE / f"collect-{size // 1_000_000}M.log"
    if not target.exists():
        corpus = SHARED / "corpus" / "mariadb" / "mixed-workload.log"
        subprocess.run(
            [sys.executable, str(SHARED / "lab" / "scale-log.py"), "--in", str(corpus),
             "--out", str(target), "--size", str(size)],
            check=True,
        )  # fmt: skip
    return target


def committed_offset(state: Path) -> int:
    """How far the collector's last commit has the log."""
    try:
        db = sqlite3.connect(f"file:{state}?mode=ro", uri=True, timeout=5)
        rows = db.execute("SELECT state FROM collect_checkpoints").fetchall()
        db.close()
    except sqlite3.Error:
        return -1
    if not rows:
        return -1
    (source,) = json.loads(rows[0][0])["sources"].values()
    files = source["position"]["files"]
    return int(files[-1]["offset"]) if files else -1


def cpu_of(argv: list[str], **options: object) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of a child run to its end."""
    began = time.perf_counter()
    child = subprocess.Popen(argv, **options)  # type: ignore[call-overload]
    _, _, usage = os.wait4(child.pid, 0)
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - began


DIGEST_CHILD = """
import sys
from govern.digest.runner import DigestOptions, digest_paths
digest_paths([sys.argv[1]], DigestOptions())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="50M", help="bytes per second written [50M]")
    parser.add_argument("--seconds", type=float, default=30.0, help="how long to write [30]")
    parser.add_argument(
        "--interval", default="30s", help="the collector's poll interval [30s, its default]"
    )
    parser.add_argument("--log", help="a slow log to replay (default: the corpus, scaled)")
    args = parser.parse_args()
    rate = parse_size(args.rate.replace("MB", "M"))
    total = int(rate * args.seconds)
    data_path = source_log(total + 8 * 1024 * 1024, args.log)
    work = Path(tempfile.mkdtemp(prefix="govern-bench-collect-"))
    log, state = work / "slow.log", work / "state.db"
    log.write_bytes(b"")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    collector = subprocess.Popen(
        [sys.executable, "-m", "govern", "collect", str(log), "--to", str(work / "buckets"),
         "--state", str(state), "--label", "bench", "--interval", args.interval,
         "--settle", "2s", "--close-after", "3650d"],
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(2)  # started and serving
    written = 0
    began = time.perf_counter()
    with data_path.open("rb") as source, log.open("ab") as sink:
        step = 0
        while written < total:
            step += 1
            due = began + step * 0.1
            piece = source.read(min(total - written, int(rate * 0.1)))
            if not piece:
                break
            sink.write(piece)
            sink.flush()
            written += len(piece)
            time.sleep(max(0.0, due - time.perf_counter()))
    wrote_for = time.perf_counter() - began
    stopped = time.perf_counter()
    while committed_offset(state) < written and time.perf_counter() - stopped < 600:
        time.sleep(0.2)
    lag = time.perf_counter() - stopped
    collector.send_signal(signal.SIGTERM)
    _, _, usage = os.wait4(collector.pid, 0)
    collect_cpu = usage.ru_utime + usage.ru_stime
    print(f"load average after the collector: {os.getloadavg()[0]:.2f}")
    cli_cpu, cli_wall = cpu_of(
        [sys.executable, "-m", "govern", "digest", "--no-rules", "--format", "json", str(log)],
        stdout=subprocess.DEVNULL,
    )
    lib_cpu, lib_wall = cpu_of([sys.executable, "-c", DIGEST_CHILD, str(log)])
    mb = written / 1e6
    print(f"written: {mb:,.0f} MB in {wrote_for:.1f} s ({mb / wrote_for:.1f} MB/s)")
    print(
        f"govern collect (service, poll every {args.interval}): {collect_cpu:.2f} CPU-s,"
        f" {collect_cpu / wrote_for:.3f} cores while the log grew; caught up {lag:.1f} s"
        " after the last write"
    )
    print(f"govern digest --no-rules --format json: {cli_cpu:.2f} CPU-s ({cli_wall:.1f} s)")
    print(f"digest_paths (library, no report):     {lib_cpu:.2f} CPU-s ({lib_wall:.1f} s)")
    # Cores at the rate asked for: the extra CPU per byte, times the bytes a second
    # (a loaded machine writes slower than asked, and the collector's cost is per byte).
    per_second = rate / written
    print(
        f"collect's extra over the digest of the same bytes, at {args.rate}B/s:"
        f" {(collect_cpu - cli_cpu) * per_second:.3f} cores over govern digest,"
        f" {(collect_cpu - lib_cpu) * per_second:.3f} over the library digest; target <= 0.1"
    )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
