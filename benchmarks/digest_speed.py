#!/usr/bin/env python3
"""govern digest against pt-query-digest on the same slow log, in one run.

    python3 benchmarks/digest_speed.py                      # a 1 GB log made by the lab's scaler
    python3 benchmarks/digest_speed.py --log big.log --jobs 2
    python3 benchmarks/digest_speed.py --distinct 1000000   # memory with 1M distinct classes

Prints, for each tool: wall time, MB/s, peak RSS (the sum over the process and its
workers, sampled every 50 ms, and the largest single process), then the speed ratio
and whether both found the same classes (query ID -> count and Query_time sum;
pt's --limit 100% leaves out classes that took no time, which govern lists).

The default log is made once with ../shared/lab/scale-log.py from
../shared/corpus/mariadb/mixed-workload.log and kept in .tmp/bench/.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CACHE = REPO / ".tmp" / "bench"


def rss_tree(pid: int) -> tuple[int, int]:
    """(resident memory of a process and its descendants, largest peak of one of them), bytes."""
    total = largest = 0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                    elif line.startswith("VmHWM:"):
                        largest = max(largest, int(line.split()[1]) * 1024)
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    stack.extend(int(child) for child in handle.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total, largest


def measure(command: list[str], output: Path) -> dict[str, Any]:
    """Run a command, stdout to ``output``; wall time and peak memory."""
    peak = largest = 0
    done = threading.Event()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with output.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.PIPE)

        def sample() -> None:
            nonlocal peak, largest
            while not done.is_set():
                total, high = rss_tree(process.pid)
                peak, largest = max(peak, total), max(largest, high)
                done.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, err = process.communicate()
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
    if process.returncode != 0:
        sys.exit(
            f"{command[0]} failed ({process.returncode}): {err.decode(errors='replace')[-2000:]}"
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "peak_rss": peak, "largest_rss": largest}


def make_log(size: str) -> Path:
    target = CACHE / f"scaled-{size}.log"
    if target.exists():
        return target
    source = SHARED / "corpus" / "mariadb" / "mixed-workload.log"
    scaler = SHARED / "lab" / "scale-log.py"
    if not source.exists() or not scaler.exists():
        sys.exit(f"need {source} and {scaler} to make a test log (or pass --log)")
    CACHE.mkdir(parents=True, exist_ok=True)
    print(f"making a {size} log with {scaler.name} …", file=sys.stderr)
    subprocess.run(
        [sys.executable, str(scaler), "--in", str(source), "--out", str(target), "--size", size],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    return target


def make_distinct_log(count: int) -> Path:
    """A log where every event is its own class (table names differ in letters)."""
    target = CACHE / f"distinct-{count}.log"
    if target.exists():
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        for n in range(count):
            name = "".join(chr(97 + (n // 26**k) % 26) for k in range(5))
            out.write(
                b"# Time: 261121 22:42:45\n# User@Host: app[app] @ localhost []\n"
                b"# Thread_id: %d  Schema: app  QC_hit: No\n"
                b"# Query_time: 0.000%03d  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 1\n"
                b"SET timestamp=1795300965;\nSELECT id FROM t_%s WHERE id = %d;\n"
                % (n % 100, n % 1000, name.encode(), n)
            )
    return target


def classes_of_pt(path: Path) -> dict[str, tuple[int, float]]:
    document = json.loads(path.read_text() or "{}")
    return {
        c["checksum"]: (int(c["query_count"]), float(c["metrics"]["Query_time"]["sum"]))
        for c in document.get("classes", [])
        if "Query_time" in c["metrics"]
    }


def classes_of_govern(path: Path) -> dict[str, tuple[int, float]]:
    document = json.loads(path.read_text())
    return {c["id"]: (c["count"], c["metrics"]["Query_time"]["sum"]) for c in document["classes"]}


def same_classes(
    pt: dict[str, tuple[int, float]], ours: dict[str, tuple[int, float]]
) -> tuple[bool, str]:
    for key, (count, total) in pt.items():
        if key not in ours:
            return False, f"pt class {key} missing"
        if ours[key][0] != count or abs(ours[key][1] - total) > 1e-6 * max(1.0, total):
            return False, f"class {key}: pt {count} / {total}, govern {ours[key]}"
    extra = [key for key in ours if key not in pt and ours[key][1] != 0]
    if extra:
        return False, f"{len(extra)} govern classes with time are not in pt's report"
    return True, f"{len(pt)} classes (+{len(ours) - len(pt)} without time that pt's --limit omits)"


def mb(value: int) -> str:
    return f"{value / 1e6:,.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--log", type=Path, help="slow log to digest [default: a scaled 1 GB lab log]"
    )
    parser.add_argument(
        "--size", default="1G", help="size of the scaled log when --log is not given"
    )
    parser.add_argument("--jobs", type=int, default=0, help="govern --jobs [default: all CPUs]")
    parser.add_argument("--skip-pt", action="store_true", help="measure govern only")
    parser.add_argument(
        "--distinct", type=int, help="instead: a log of N distinct classes (memory)"
    )
    args = parser.parse_args()

    govern = shutil.which("govern", path=str(REPO / ".venv" / "bin")) or "govern"
    log = make_distinct_log(args.distinct) if args.distinct else (args.log or make_log(args.size))
    size = log.stat().st_size
    CACHE.mkdir(parents=True, exist_ok=True)
    print(
        f"log: {log} ({mb(size)}); machine: {os.cpu_count()} CPUs; govern --jobs {args.jobs or os.cpu_count()}"
    )
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache

    results: dict[str, dict[str, Any]] = {}
    outputs = {"pt": CACHE / "pt.json", "govern": CACHE / "govern.json"}
    if not args.skip_pt:
        pt = shutil.which("pt-query-digest")
        if pt is None:
            sys.exit(
                "pt-query-digest not found (apt-get install percona-toolkit), or use --skip-pt"
            )
        results["pt-query-digest"] = measure(
            [pt, "--no-version-check", "--output", "json", "--limit", "100%", str(log)],
            outputs["pt"],
        )
    results["govern digest"] = measure(
        [govern, "digest", "--format", "json", "--jobs", str(args.jobs), str(log)],
        outputs["govern"],
    )
    print(
        f"load average before: {os.getloadavg()[0]:.2f} (other work on the machine slows both tools)"
    )
    print(
        f"{'tool':<16} {'wall':>9} {'MB/s':>8} {'CPU':>8} {'MB/CPU-s':>9} "
        f"{'peak RSS (all)':>15} {'largest process':>16}"
    )
    for name, figures in results.items():
        print(
            f"{name:<16} {figures['wall']:>8.1f}s {size / 1e6 / figures['wall']:>8.1f} "
            f"{figures['cpu']:>7.1f}s {size / 1e6 / figures['cpu']:>9.1f} "
            f"{mb(figures['peak_rss']):>15} {mb(figures['largest_rss']):>16}"
        )
    if "pt-query-digest" in results:
        ratio = results["pt-query-digest"]["wall"] / results["govern digest"]["wall"]
        match, detail = same_classes(
            classes_of_pt(outputs["pt"]), classes_of_govern(outputs["govern"])
        )
        print(f"speed ratio govern/pt: {ratio:.2f}x (wall)")
        cpu_ratio = results["pt-query-digest"]["cpu"] / results["govern digest"]["cpu"]
        print(f"CPU-time ratio pt/govern: {cpu_ratio:.2f}x (work per CPU second)")
        print(f"same classes: {'yes' if match else 'NO'} ({detail})")
    else:
        print(f"classes: {len(classes_of_govern(outputs['govern']))}")


if __name__ == "__main__":
    main()
