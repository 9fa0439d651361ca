#!/usr/bin/env python3
"""`govern digest` (native core) beside pt-query-digest and `cat`, on the same warm log, in one run.

    python3 benchmarks/digest_native.py                       # 1 GB and 5 GB logs from the lab's scaler
    python3 benchmarks/digest_native.py --size 1G --pt-slice 256M
    python3 benchmarks/digest_native.py --log big.log --pt-slice 1G --threads 2
    python3 benchmarks/digest_native.py --distinct 200000     # memory with 200,000 classes

Prints, per tool: input, wall time, MB/s, peak RSS; then the ratios to pt and to `cat FILE >
/dev/null` of the same file (each the best of three runs on the warm file), and whether the classes are pt's (fingerprint -> count and
Query_time sum). pt-query-digest runs at ~5 MB/s, so by default it reads only the first
--pt-slice bytes (cut at an event boundary) and its speed there stands for the whole file;
--pt-full runs it on everything. Run it on a quiet machine (see `uptime`): it prints the
load average before and after.

Three govern rows: the digest alone (`govern.digest.runner.digest_paths`: the core's ranges on
threads, merged inside the core, no report), the same on one thread (the parse's rate per core,
as `--jobs 1`), and end to end,
`govern digest --format json FILE` as a user runs it (segments digested by the core on
threads, merged inside the core, the rules and the JSON document), whose classes are the
ones compared with pt's. With --distinct, `govern digest` keeps every class
(`--max-classes 1000000`), as pt does.

Each tool runs as its own child process; peak RSS is that child's (wait4's ru_maxrss),
which includes the Python interpreter. CPU time (user + system, workers included) is printed too: the machine is
shared, and it does not depend on the load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from govern.units import parse_size

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CACHE = REPO / ".tmp" / "bench"
SEP = b";\n#"
#: CPU seconds (user + system) of the last measured child: the machine is shared, and
#: CPU time says what a run costs whatever else is running.
LAST_CPU = [0.0]
#: The children's bytecode cache. An installed govern has its .pyc files (pip compiles
#: them); under PYTHONDONTWRITEBYTECODE (set in some sessions, CI) each run would compile
#: govern's and the rules' ~100 modules again, about 0.1 CPU-s no user pays. The first of
#: the three runs fills it.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {
    "PYTHONPYCACHEPREFIX": str(CACHE / "pycache")
}

DIGEST_CHILD = """
import json, resource, sys, time
from govern.digest.options import DigestOptions
from govern.digest.runner import digest_paths
path, threads, keep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = time.perf_counter()
digest = digest_paths([path], DigestOptions(jobs=threads, max_classes=10**6 if keep else 10_000))
secs = time.perf_counter() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
partial, classes = digest.partial, {}
for i in range(partial.class_count()):
    agg = partial.class_at(i)
    if "Query_time" in agg.metrics:
        fp = agg.fingerprint.decode("utf-8", "surrogateescape")
        classes[fp] = [agg.count, agg.metrics["Query_time"].total / 1e6]
print(json.dumps({"seconds": secs, "rss_digest": rss, "events": partial.events, "classes": classes}))
"""


def measured(command: list[str]) -> tuple[float, int, bytes]:
    """Wall seconds, peak RSS (bytes) and stdout of `command`, run under a small wrapper
    that waits for it with wait4 and so reports that child's own peak RSS."""
    wrapper = (
        "import os, subprocess, sys, time, json\n"
        "t = time.perf_counter()\n"
        "p = subprocess.Popen(sys.argv[1:])\n"
        "_, status, usage = os.wait4(p.pid, 0)\n"
        "sys.stderr.write(json.dumps({'wall': time.perf_counter() - t, 'rss': usage.ru_maxrss * 1024,"
        " 'cpu': usage.ru_utime + usage.ru_stime, 'status': status}) + '\\n')\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", wrapper, *command], capture_output=True, check=True, env=CHILD_ENV
    )
    stats = json.loads(child.stderr.decode().strip().splitlines()[-1])
    if stats["status"]:
        sys.exit(f"{command[0]} exited with status {stats['status']}")
    LAST_CPU[0] = stats["cpu"]
    return stats["wall"], stats["rss"], child.stdout


def make_scaled(size: int) -> Path:
    path = CACHE / f"scaled-{size >> 20}m.log"
    if not path.exists():
        scaler = SHARED / "lab" / "scale-log.py"
        source = SHARED / "corpus" / "mariadb" / "mixed-workload.log"
        if not scaler.exists():
            sys.exit(f"{scaler} is absent: pass --log FILE")
        print(f"making {path} ({size >> 20} MB) with {scaler.name} ...", file=sys.stderr)
        subprocess.run(
            [
                sys.executable,
                str(scaler),
                "--in",
                str(source),
                "--out",
                str(path),
                "--size",
                str(size),
            ],
            check=True,
        )
    return path


def make_distinct(n: int) -> Path:
    """A MariaDB-style log with `n` distinct classes (one table name each), three events per class."""
    path = CACHE / f"distinct-{n}.log"
    if path.exists():
        return path
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    with path.open("wb") as f:
        f.write(b"# Time: 261121 22:42:45\n")
        for rep in range(3):
            for i in range(n):
                name, k = "", i
                for _ in range(5):
                    name, k = alphabet[k % 26] + name, k // 26
                qt = (i * 7 + rep * 13) % 997
                f.write(
                    b"# User@Host: web[web] @ localhost []\n"
                    b"# Thread_id: %d  Schema: shop  QC_hit: No\n"
                    b"# Query_time: 0.%06d  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: %d\n"
                    b"# Rows_affected: 0  Bytes_sent: 120\n"
                    b"SET timestamp=1795300965;\n"
                    b"SELECT id, note FROM notes_%s WHERE id = %d;\n"
                    % (i % 1000, qt, i % 50, name.encode(), i)
                )
    return path


def slice_of(path: Path, size: int) -> Path:
    """The first `size` bytes of a log, cut just before an event (after a `;\\n`)."""
    out = CACHE / f"{path.stem}.first-{size >> 20}m.log"
    if out.exists():
        return out
    with path.open("rb") as f:
        head = f.read(size)
        tail = f.read(1 << 20)
    cut = (head + tail).find(SEP, size)
    with out.open("wb") as f:
        f.write((head + tail)[: cut + 2] if cut >= 0 else head)
    return out


def pt_classes(report: bytes) -> dict[str, list[float]]:
    text = report.decode("utf-8", "surrogateescape").strip()
    if not text.startswith("{"):
        return {}
    return {
        c["fingerprint"]: [c["query_count"], float(c["metrics"]["Query_time"]["sum"])]
        for c in json.loads(text)["classes"]
    }


def same_classes(a: dict[str, list[float]], b: dict[str, list[float]]) -> bool:
    return a.keys() == b.keys() and all(
        a[k][0] == b[k][0] and abs(a[k][1] - b[k][1]) <= 1e-6 * max(1.0, abs(b[k][1])) for k in a
    )


def warm(path: Path) -> None:
    """Read the file into the page cache again before a timed run: this VM's memory
    manager (DAMON) evicts cold page-cache pages within seconds, so a file warmed once
    is partly read from disk by the third run."""
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)


def cat_speed(path: Path) -> float:
    """Seconds of `cat FILE > /dev/null` on the warm file (best of three)."""
    best = float("inf")
    warm(path)
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - t)
    return best


def end_to_end(path: Path, keep_all: bool = False) -> tuple[float, int, dict[str, Any]]:
    """`govern digest --format json FILE`: (wall seconds, peak RSS, classes and totals).
    ``keep_all``: with --max-classes 1000000, so every class is kept and reported, as pt does."""
    extra = ["--max-classes", "1000000"] if keep_all else []
    warm(path)
    wall, rss, out = measured(
        [sys.executable, "-m", "govern", "digest", "--format", "json", *extra, str(path)]
    )
    document = json.loads(out)
    classes = {
        c["fingerprint"]: [c["count"], float(c["metrics"]["Query_time"]["sum"])]
        for c in document["classes"]
        if "Query_time" in c["metrics"]
    }
    return wall, rss, {"classes": classes, "events": document["totals"]["events"]}


def digest_alone(
    path: Path, threads: int, keep_all: bool = False
) -> tuple[float, float, int, dict[str, Any]]:
    """(digest seconds, wall seconds incl. start-up, peak RSS, result)."""
    warm(path)
    command = [sys.executable, "-c", DIGEST_CHILD, str(path), str(threads), str(int(keep_all))]
    wall, rss, out = measured(command)
    result = json.loads(out)
    return result["seconds"], wall, rss, result


def pt_view(path: Path) -> tuple[Path, int]:
    """The log as pt must read it to find govern's events, and how many MariaDB banners it
    has. govern reads MariaDB's `mariadbd, Version` banner as a record boundary; pt's pattern
    knows `mysqld` only and glues the events around it into one junk class (a departure
    from pt: docs/design/digest-engines.md). Renamed to `xxmysqld,` (same length), the
    banner is read by pt as govern reads it, as the pt oracles of the tests do."""
    data = path.read_bytes()
    banners = data.count(b"mariadbd, Version")
    if not banners:
        return path, 0
    out = CACHE / f"{path.stem}.pt-view.log"
    if not out.exists():
        out.write_bytes(data.replace(b"mariadbd, Version", b"xxmysqld, Version"))
    return out, banners


def pt(path: Path) -> tuple[float, int, dict[str, list[float]]]:
    warm(path)
    wall, rss, out = measured(
        ["pt-query-digest", "--no-version-check", "--output", "json", "--limit", "100%", str(path)]
    )
    return wall, rss, pt_classes(out)


def row(tool: str, what: str, secs: float, nbytes: int, rss: int | None, extra: str = "") -> None:
    mbs = nbytes / secs / 1e6
    rss_text = f"{rss / 2**20:8.0f} MiB" if rss else "       -    "
    print(f"{tool:<22} {what:<28} {secs:9.2f} s {mbs:9.1f} MB/s {rss_text}  {extra}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--log", type=Path, help="slow log to digest (default: make one with the lab's scaler)"
    )
    ap.add_argument(
        "--size",
        type=lambda text: [parse_size(part) for part in text.split(",")],
        default=[parse_size("1G"), parse_size("5G")],
        help="sizes of the made logs, comma-separated, each measured in turn (default 1G,5G)",
    )
    ap.add_argument(
        "--pt-slice", type=parse_size, default=parse_size("1G"), help="bytes pt reads (default 1G)"
    )
    ap.add_argument("--pt-full", action="store_true", help="run pt-query-digest on the whole log")
    ap.add_argument("--threads", type=int, default=0, help="native threads (default: one per core)")
    ap.add_argument(
        "--repeat", type=int, default=3, help="native runs on the whole log; the best is reported"
    )
    ap.add_argument(
        "--distinct", type=int, help="instead: a log with this many distinct classes (memory)"
    )
    ap.add_argument("--no-pt", action="store_true", help="skip pt-query-digest (slow)")
    args = ap.parse_args()

    sys.path.insert(0, str(REPO))
    from govern import native as core

    if not core.available():
        sys.exit(
            "the native core is not built: run bash scripts/test (or pip install . with cargo)"
        )
    CACHE.mkdir(parents=True, exist_ok=True)
    if args.distinct:
        paths = [make_distinct(args.distinct)]
    else:
        paths = [args.log] if args.log else [make_scaled(size) for size in args.size]
    for path in paths:
        bench(path, args)


def bench(path: Path, args: argparse.Namespace) -> None:
    """Every row for one log."""
    size = path.stat().st_size
    print(f"load average before: {os.getloadavg()}, cpus: {os.cpu_count()}")
    print(f"log: {path} ({size / 1e9:.2f} GB)\n")

    cat_secs = cat_speed(path)
    row("cat FILE > /dev/null", "whole file, warm", cat_secs, size, None)
    runs, cpus = [], []
    for _ in range(max(1, args.repeat)):
        runs.append(digest_alone(path, args.threads, keep_all=bool(args.distinct)))
        cpus.append(LAST_CPU[0])
    secs, wall, rss, result = min(runs, key=lambda r: r[0])
    speeds = ", ".join(f"{size / r[0] / 1e6:.0f}" for r in runs)
    print(
        f"digest alone runs: {speeds} MB/s (best shown); CPU {min(cpus):.1f} s user+system, {size / min(cpus) / 1e6:.0f} MB per CPU-second"
    )
    row(
        "govern digest, no report",
        f"whole file, {args.threads or os.cpu_count()} threads",
        secs,
        size,
        rss,
        f"{len(result['classes'])} classes, {result['events']} events; {wall:.2f} s with start-up;"
        f" {result['rss_digest'] / 2**20:.0f} MiB before the classes were read",
    )

    if not args.distinct:
        one, _, _, _ = min(
            (digest_alone(path, 1) for _ in range(max(1, args.repeat))), key=lambda r: r[0]
        )
        row("govern digest, no report", "whole file, 1 thread (per core)", one, size, None)

    e2e = []
    for _ in range(max(1, args.repeat)):
        e2e.append((*end_to_end(path, keep_all=bool(args.distinct)), LAST_CPU[0]))
    e2e_secs, e2e_rss, e2e_result, _ = min(e2e, key=lambda r: r[0])
    speeds = ", ".join(f"{size / r[0] / 1e6:.0f}" for r in e2e)
    print(
        f"govern digest runs: {speeds} MB/s (best shown); CPU {min(r[3] for r in e2e):.1f} s"
        f" user+system, {size / min(r[3] for r in e2e) / 1e6:.0f} MB per CPU-second"
    )
    row(
        "govern digest (CLI)",
        "whole file, end to end" + (", every class" if args.distinct else ""),
        e2e_secs,
        size,
        e2e_rss,
        f"{len(e2e_result['classes'])} classes, {e2e_result['events']} events",
    )
    if args.no_pt:
        e2e_mbs, cat_mbs = size / e2e_secs / 1e6, size / cat_secs / 1e6
        print(
            f"\ngovern digest / cat: {e2e_mbs / cat_mbs:.2f}  ({e2e_mbs:.0f} vs {cat_mbs:.0f} MB/s)"
        )
        print(f"load average after: {os.getloadavg()}")
        return

    pt_path = (
        path
        if (args.pt_full or args.distinct or size <= args.pt_slice)
        else slice_of(path, args.pt_slice)
    )
    pt_size = pt_path.stat().st_size
    pt_read, banners = pt_view(pt_path)
    if banners:
        print(
            f"{banners} MariaDB banners: pt reads a copy with them renamed to `xxmysqld,`"
            " (else it glues the events around each into one junk class)"
        )
    pt_secs, pt_rss, pt_found = pt(pt_read)
    print(f"pt CPU time: {LAST_CPU[0]:.1f} s, {pt_size / LAST_CPU[0] / 1e6:.1f} MB per CPU-second")
    what = "whole file" if pt_path == path else f"first {pt_size / 1e9:.2f} GB"
    row("pt-query-digest 3.2.1", what, pt_secs, pt_size, pt_rss, f"{len(pt_found)} classes")
    if pt_path != path:
        s_secs, _, s_rss, s_result = digest_alone(pt_path, args.threads)
        row(
            "govern digest, no report",
            what,
            s_secs,
            pt_size,
            s_rss,
            f"{len(s_result['classes'])} classes",
        )
        ours = s_result["classes"]
        e_secs, e_rss, e_result = end_to_end(pt_path)
        row(
            "govern digest (CLI)",
            what,
            e_secs,
            pt_size,
            e_rss,
            f"{len(e_result['classes'])} classes",
        )
        ours_e2e = e_result["classes"]
    else:
        ours = result["classes"]
        ours_e2e = e2e_result["classes"]

    alone_mbs, pt_mbs, cat_mbs = size / secs / 1e6, pt_size / pt_secs / 1e6, size / cat_secs / 1e6
    e2e_mbs = size / e2e_secs / 1e6
    print()
    print(
        f"govern digest / pt-query-digest: {e2e_mbs / pt_mbs:.0f}x  ({e2e_mbs:.0f} vs {pt_mbs:.1f} MB/s)"
    )
    print(
        f"govern digest / cat:             {e2e_mbs / cat_mbs:.2f}  ({e2e_mbs:.0f} vs {cat_mbs:.0f} MB/s)"
    )
    print(
        f"digest alone / pt-query-digest: {alone_mbs / pt_mbs:.0f}x  ({alone_mbs:.0f} vs {pt_mbs:.1f} MB/s)"
    )
    print(
        f"digest alone / cat:             {alone_mbs / cat_mbs:.2f}  ({alone_mbs:.0f} vs {cat_mbs:.0f} MB/s)"
    )
    if pt_path != path:
        print(
            f"pt on the whole file, extrapolated from its speed: {size / pt_mbs / 1e6 / 60:.0f} min"
        )
    print(
        f"classes identical to pt's (count, Query_time sum): digest alone {same_classes(ours, pt_found)},"
        f" govern digest {same_classes(ours_e2e, pt_found)}"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
