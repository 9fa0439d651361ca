"""Peak memory of `govern digest` past --max-classes: distinct statements folded into `other`.

    python3 benchmarks/digest_capped_memory.py                      # 20k, 200k, 2M distinct
    python3 benchmarks/digest_capped_memory.py --distinct 20000 200000 --govern OTHER/.venv/bin/govern

Each log holds N distinct statements (one table name each), one event per statement, on
1,000 connections, beside a log of as many events of only `--max-classes` statements
(what the log's size costs: mapped pages and segments in flight); `govern digest --format json --no-rules --max-classes 1000` runs under
/usr/bin/time -v and its peak RSS is printed with the wall and CPU time and the load
average. Flat peaks mean distinct statements past the cap cost nothing that grows with
them. (pt-query-digest has no cap: it keeps every class, about 36 KB each; see
digest_native.py --distinct.) Logs are cached in ~/.cache/govern-bench.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

CACHE = Path.home() / ".cache" / "govern-bench"
ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def make_log(n: int, distinct: int | None = None) -> Path:
    """A MariaDB-style log of `n` events of `distinct` statements (default: all distinct)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    distinct = distinct or n
    path = CACHE / f"distinct-once-{n}-{distinct}.log"
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        f.write(b"# Time: 261121 22:42:45\n")
        for i in range(n):
            name, k = "", i % distinct
            for _ in range(5):
                name, k = ALPHABET[k % 26] + name, k // 26
            f.write(
                b"# User@Host: web[web] @ localhost []\n"
                b"# Thread_id: %d  Schema: shop  QC_hit: No\n"
                b"# Query_time: 0.%06d  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: %d\n"
                b"SET timestamp=1795300965;\n"
                b"SELECT id, note FROM notes_%s WHERE id = %d;\n"
                % (i % 1000, (i * 7) % 997, i % 50, name.encode(), i)
            )
    tmp.rename(path)
    return path


def measure(govern: str, path: Path, max_classes: int) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (KiB) of one digest, output discarded."""
    command = [
        "/usr/bin/time",
        "-v",
        govern,
        "digest",
        "--format",
        "json",
        "--no-rules",
        "--max-classes",
        str(max_classes),
        str(path),
    ]
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"govern digest exited {done.returncode}: {done.stderr[-2000:]}")
    field = dict(re.findall(r"^\s*(.+?): (.+)$", done.stderr, re.M))
    wall = field["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    secs = sum(float(x) * 60**i for i, x in enumerate(reversed(wall)))
    cpu = float(field["User time (seconds)"]) + float(field["System time (seconds)"])
    return secs, cpu, int(field["Maximum resident set size (kbytes)"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distinct", type=int, nargs="+", default=[20_000, 200_000, 2_000_000])
    parser.add_argument("--max-classes", type=int, default=1000)
    parser.add_argument("--govern", default=str(Path(sys.executable).parent / "govern"))
    args = parser.parse_args()
    print(f"govern: {args.govern}, --max-classes {args.max_classes}")
    print(
        f"{'events':>10} {'distinct':>10} {'log MB':>8} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9}  load"
    )
    for n in args.distinct:
        # The same events of `--max-classes` statements beside them: what the size costs.
        for distinct in (n, args.max_classes):
            path = make_log(n, distinct)
            wall, cpu, rss = measure(args.govern, path, args.max_classes)
            load = " ".join(f"{x:.2f}" for x in os.getloadavg())
            size = path.stat().st_size / 1e6
            print(
                f"{n:>10,} {distinct:>10,} {size:>8.1f} {wall:>8.2f} {cpu:>8.2f} {rss / 1024:>9.1f}  {load}"
            )


if __name__ == "__main__":
    main()
