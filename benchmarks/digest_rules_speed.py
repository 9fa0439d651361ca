"""CPU time and peak memory of `govern digest --format json` with the digest rules (the default)
and without them, on a log of N distinct classes (200,000 by default) that also holds every
rule's docstring workloads, so each digest rule has classes to fire on.

    .venv/bin/python benchmarks/digest_rules_speed.py                  # 200,000 classes, 1 run
    .venv/bin/python benchmarks/digest_rules_speed.py --distinct 20000 --runs 3 --govern OTHER/.venv/bin/govern

The log: the Anti-pattern and Best practice blocks of every rule (rules.eventlog.slow_log,
each block on connections of its own), then N distinct statements, one event each, on 1,000
connections: mostly point reads of one table each, and every 97th an INSERT into a table
others read (the tables' traffic), every 101st a read with a string, a backtick name or a
comment (what the core's lexical test leaves to Python), every 1,009th a SQL_CACHE read.
Each run is `/usr/bin/time -v govern digest --format json --max-classes 1000000 LOG >
file`; printed: user+system CPU seconds, wall seconds, peak RSS, the load average, and the
findings per rule of the last run with rules. Logs are cached in ~/.cache/govern-bench.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from govern.rules.catalog import RULES  # noqa: E402
from govern.rules.eventlog import slow_log  # noqa: E402

CACHE = Path.home() / ".cache" / "govern-bench"
ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def _name(i: int) -> str:
    name = ""
    for _ in range(5):
        name, i = ALPHABET[i % 26] + name, i // 26
    return name


def _statement(i: int) -> str:
    name = _name(i)
    if i % 97 == 0:
        return f"INSERT INTO notes_{_name(i + 1)} (id, note) VALUES ({i}, 'n')"
    if i % 101 == 0:
        return f"SELECT `id`, note /* {i} */ FROM notes_{name} WHERE note = 'x{i}' AND id = {i}"
    if i % 1009 == 0:
        return f"SELECT SQL_CACHE id, note FROM notes_{name} WHERE created < NOW() AND id = {i}"
    return f"SELECT id, note FROM notes_{name} WHERE id = {i}"


def make_log(distinct: int) -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"rules-{distinct}.log"
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        for block, rule in enumerate(RULES):
            for examples in rule.examples().values():
                for number, example in enumerate(examples):
                    text = slow_log(example.sql)
                    base = 10_000 + 100 * (block * 10 + number)
                    f.write(
                        re.sub(
                            rb"Thread_id: (\d+)",
                            lambda m, base=base: b"Thread_id: %d" % (base + int(m.group(1))),
                            text,
                        )
                    )
        f.write(b"# Time: 261121 22:42:45\n")
        for i in range(distinct):
            f.write(
                b"# User@Host: web[web] @ localhost []\n"
                b"# Thread_id: %d  Schema: shop  QC_hit: No\n"
                b"# Query_time: 0.%06d  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: %d\n"
                b"SET timestamp=1795300965;\n%s;\n"
                % (i % 1000, (i * 7) % 997, i % 50, _statement(i).encode())
            )
    tmp.rename(path)
    return path


def measure(govern: str, log: Path, rules: bool, out: Path) -> tuple[float, float, int]:
    """CPU seconds, wall seconds and peak RSS (KiB) of one digest, JSON written to ``out``."""
    command = ["/usr/bin/time", "-v", govern, "digest", "--format", "json"]
    command += [] if rules else ["--no-rules"]
    command += ["--max-classes", "1000000", str(log)]
    with out.open("wb") as sink:
        done = subprocess.run(command, stdout=sink, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"govern digest exited {done.returncode}: {done.stderr[-2000:]}")
    field = dict(re.findall(r"^\s*(.+?): (.+)$", done.stderr, re.M))
    wall = field["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":")
    secs = sum(float(x) * 60**i for i, x in enumerate(reversed(wall)))
    cpu = float(field["User time (seconds)"]) + float(field["System time (seconds)"])
    return cpu, secs, int(field["Maximum resident set size (kbytes)"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distinct", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--govern", default=str(REPO / ".venv" / "bin" / "govern"))
    args = parser.parse_args()
    log = make_log(args.distinct)
    print(f"{log} ({log.stat().st_size / 1e6:.1f} MB), govern: {args.govern}")
    print(f"{'run':>8} {'CPU s':>7} {'wall s':>7} {'RSS MiB':>8} {'load':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "digest.json"
        for _ in range(args.runs):
            for rules in (True, False):
                cpu, wall, rss = measure(args.govern, log, rules, out)
                label = "rules" if rules else "no-rules"
                load = os.getloadavg()[0]
                print(f"{label:>8} {cpu:7.2f} {wall:7.2f} {rss / 1024:8.1f} {load:5.1f}")
                if rules:
                    with out.open() as f:
                        document = json.load(f)
        found = collections.Counter(
            finding["rule"] for item in document["classes"] for finding in item["findings"]
        )
    print("findings:", ", ".join(f"{rule} {n:,}" for rule, n in sorted(found.items())))
    print("not run:", ", ".join(s["rule"] for s in document["rules"]["rules_skipped"]) or "-")


if __name__ == "__main__":
    main()
