"""A night of summary builds on a primary and two replicas: policies, estimate error, makespan.

    .venv/bin/python benchmarks/schedule_night.py [--scale 0.1] [--learn 10] [--seed 7]

Starts a throwaway primary and two replicas (tests/harness.py) and a generated catalog
of 42 summary builds, one per tenant, whose daily rows follow a truncated Pareto tail
(alpha 0.5) from 1,000 to 850,000 rows (times ``--scale``: a loaded 2-core machine runs
0.1). Each job reads its tenant's rows of the day on its replica and writes one summary
row per 10 read to the primary, so two workers write to one primary. Each night's sizes
move by up to +-10% (the cache table is rewritten before it).

1. Learning: two one-worker nights, then two-worker nights, ``--learn`` + 1 in all,
   policy sjf. The estimate error (duration-weighted: sum |est - real| / sum real) of the
   night after 1, 3 and ``--learn`` nights of history, beside the error the same
   estimator would have made without the contention factor (runs taken as they were).
2. Predicted against real makespan, two workers: for each later night, the plan's
   makespan with the measured contention, and without it.
3. Policies, two workers, one real night each: mean completion and share done at half
   the night.
4. Back to one worker: the error of a night whose setup changed.

Every server is destroyed at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.harness

from govern.schedulers.catalog import load_catalog  # noqa: E402
from govern.schedulers.contention import NONE  # noqa: E402
from govern.schedulers.estimates import Estimator  # noqa: E402
from govern.schedulers.history import History  # noqa: E402
from govern.schedulers.night import run_night, secrets_dir  # noqa: E402
from govern.schedulers.plan import make_plan  # noqa: E402
from govern.schedulers.simulate import simulate  # noqa: E402
from govern.schedulers.workers import ServerPool  # noqa: E402
from govern.state import StateStore  # noqa: E402
from tests.harness import MariaDB  # noqa: E402

TENANTS = 42
LOW, HIGH, ALPHA = 1_000, 850_000, 0.5
POLICIES = ("sjf", "fifo", "two-ended", "ljf")  # wspt is sjf here: equal weights
JOB = """#!/bin/bash
# job.sh TENANT: summarise the tenant's rows of the day (one row per 10 read) on the primary.
set -euo pipefail
t=${1#t}
client=$(command -v mariadb || command -v mysql)
"$client" --defaults-file="$GOVERN_WORKER_CNF" --batch --skip-column-names -e "
  SELECT tenant, id DIV 10, COUNT(*), SUM(amount) FROM (
    SELECT tenant, id, amount FROM bench.events WHERE tenant = $t ORDER BY id
    LIMIT ${GOVERN_JOB_ROWS:-0}) day GROUP BY tenant, id DIV 10" |
  "$client" --defaults-file="$GOVERN_PRIMARY_CNF" --local-infile=1 -e "
    DELETE FROM bench.summary WHERE tenant = $t;
    LOAD DATA LOCAL INFILE '/dev/stdin' INTO TABLE bench.summary"
"""


def tenant_rows(scale: float, seed: int) -> dict[str, int]:
    """42 daily volumes on a truncated Pareto tail, exactly LOW and HIGH at the ends."""
    ratio = (LOW / HIGH) ** ALPHA
    sizes = [LOW / (1 - i / (TENANTS - 1) * (1 - ratio)) ** (1 / ALPHA) for i in range(TENANTS)]
    random.Random(seed).shuffle(sizes)
    return {f"t{i + 1:02d}": max(int(s * scale), 10) for i, s in enumerate(sizes)}


def catalog_text(job: Path, primary: Path, workers: dict[str, Path]) -> str:
    lines = [
        'name = "night"',
        'policy = "sjf"',
        "[sizing]",
        'server = "primary"',
        'query = "SELECT tenant, approx_rows FROM bench.row_counts ORDER BY tenant"',
        "[primary]",
        f'defaults_file = "{primary}"',
    ]
    for name, cnf in workers.items():
        lines += [f"[workers.{name}]", f'defaults_file = "{cnf}"']
    lines += ["[each.summary]", f'command = ["{job}", "{{key}}"]', 'timeout = "30m"']
    return "\n".join(lines) + "\n"


def sql(server: MariaDB, *statements: str, args: Any = None) -> None:
    conn: Any = server.connect()
    with conn.cursor() as cur:
        for statement in statements:
            if args is not None and "%s" in statement:
                cur.executemany(statement, args)
            else:
                cur.execute(statement)
    conn.commit()
    conn.close()


def load(primary: MariaDB, rows: dict[str, int]) -> None:
    """Each tenant's day, 10% over its size (sizes move +-10% a night), from seq_1_to_N."""
    sql(
        primary,
        "CREATE DATABASE bench",
        "CREATE TABLE bench.events (tenant SMALLINT, id INT, amount INT, PRIMARY KEY (tenant, id))",
        "CREATE TABLE bench.summary (tenant SMALLINT, bucket INT, n INT, total BIGINT,"
        " PRIMARY KEY (tenant, bucket))",
        "CREATE TABLE bench.row_counts (tenant VARCHAR(8) PRIMARY KEY, approx_rows BIGINT)",
        *(
            f"INSERT INTO bench.events SELECT {name[1:]}, seq, seq * 7919 % 1000"
            f" FROM bench.seq_1_to_{int(n * 1.1) + 1}"
            for name, n in rows.items()
        ),
    )


def tonight(primary: MariaDB, rows: dict[str, int], rng: random.Random) -> None:
    sizes = [(name, int(n * rng.uniform(0.9, 1.1))) for name, n in rows.items()]
    sql(primary, "REPLACE INTO bench.row_counts VALUES (%s, %s)", args=sizes)


def caught_up(primary: MariaDB, replicas: list[MariaDB], timeout: float = 900) -> None:
    conn: Any = primary.connect()
    with conn.cursor() as cur:
        cur.execute("SELECT @@gtid_binlog_pos")
        target = cur.fetchone()[0]
    conn.close()
    for replica in replicas:
        conn = replica.connect()
        with conn.cursor() as cur:
            cur.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (target, timeout))
            if cur.fetchone()[0] != 0:
                raise SystemExit("a replica did not catch up")
        conn.close()


def predicted(path: Path, state: Path, policy: str) -> tuple[float, float, dict[str, float]]:
    """Tonight's predicted makespan with the measured contention, and without it (the
    history's runs taken as they were, no slowdown beside others) with its per-job times."""
    catalog = load_catalog(path)
    with StateStore.open(state) as store, ServerPool(catalog, secrets_dir(store)) as pool:
        history = History(store)
        plan = make_plan(catalog, pool, history, policy)
        samples = history.samples(catalog.name, catalog.history_window)
    old = Estimator(samples, catalog.rows_per_second, contention=NONE)
    durations = {
        j.name: old.estimate(j.name, plan.sizes.rows[j.name]).seconds or plan.unknown_seconds
        for j in plan.catalog.jobs
    }
    before = simulate(policy, plan.tasks, plan.lanes, durations).metrics.makespan
    return plan.timeline.metrics.makespan, before, durations


def error_without(result: dict[str, Any], durations: dict[str, float]) -> float:
    """The night's duration-weighted error had the estimates ignored contention."""
    ok = [j for j in result["jobs"] if j["outcome"] == "ok" and j["name"] in durations]
    actual = sum(j["actual_s"] for j in ok)
    return sum(abs(j["actual_s"] - durations[j["name"]]) for j in ok) / actual * 100


def night(path: Path, state: Path, policy: str) -> dict[str, Any]:
    with StateStore.open(state) as store:
        result = run_night(
            load_catalog(path), store, policy=policy, show_progress=False, notify=lambda m: None
        )
    if result["status"] != "ok":
        failed = [(j["name"], j["reason"]) for j in result["jobs"] if j["outcome"] != "ok"]
        raise SystemExit(f"night failed: {failed[:3]}")
    return result


def line(label: str, result: dict[str, Any], extra: str = "") -> None:
    s, e = result["summary"], result["summary"]["estimate_error"]
    pct = e["weighted_abs_pct"]
    print(
        f"  {label:<24} makespan {s['makespan_s']:6.2f} s  mean completion"
        f" {s['mean_completion_s']:6.2f} s  done at half {s['done_at_half_makespan']:6.1%}"
        f"  estimate error {'-' if pct is None else f'{pct:5.1f}%'}"
        f" ({e['abs_error_s']:.2f} s of {e['total_actual_s']:.2f} s){extra}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1, help="times the daily rows")
    parser.add_argument("--learn", type=int, default=10, help="nights of history at the end")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rows = tenant_rows(args.scale, args.seed)
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="govern-bench-night-"))
    primary = MariaDB(base / "primary")
    replicas = [MariaDB(base / f"replica{i}", server_id=i + 1) for i in (1, 2)]
    try:
        primary.start()
        for replica in replicas:
            replica.start()
            replica.start_replica_of(primary)
        started = time.monotonic()
        load(primary, rows)
        caught_up(primary, replicas)
        total = sum(rows.values())
        print(
            f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f};"
            f" {TENANTS} tenants, {min(rows.values()):,}-{max(rows.values()):,} rows a day"
            f" (scale {args.scale:g}), {total:,} in all, largest {max(rows.values()) / total:.0%};"
            f" loaded and replicated in {time.monotonic() - started:.0f} s",
            flush=True,
        )
        job = base / "job.sh"
        job.write_text(JOB)
        job.chmod(0o755)
        cnf = {r: r.defaults_file("govern_admin") for r in (primary, *replicas)}
        one, two = base / "one.toml", base / "two.toml"
        one.write_text(catalog_text(job, cnf[primary], {"replica1": cnf[replicas[0]]}))
        two.write_text(
            catalog_text(
                job, cnf[primary], {"replica1": cnf[replicas[0]], "replica2": cnf[replicas[1]]}
            )
        )
        state = base / "state.db"

        print("learning, policy sjf (error: this night's estimates against what happened):")
        errors: dict[int, tuple[float, float]] = {}
        makespans: list[tuple[float, float, float]] = []
        for n in range(args.learn + 1):
            path = one if n < 2 else two
            tonight(primary, rows, rng)
            caught_up(primary, replicas)
            extra = ""
            if n:
                with_c, without, old = predicted(path, state, "sjf")
            result = night(path, state, "sjf")
            if n:
                pct = result["summary"]["estimate_error"]["weighted_abs_pct"]
                errors[n] = (pct, error_without(result, old))
                extra = f"  without contention {errors[n][1]:5.1f}%"
            if path is two and n >= 3:
                real = result["summary"]["makespan_s"]
                makespans.append((with_c, without, real))
                extra += f"; makespan predicted {with_c:.2f} s (without: {without:.2f} s)"
            workers = "1 worker" if path is one else "2 workers"
            line(f"night {n + 1} ({workers}, {n} before)", result, extra)
            if n == args.learn:
                worst = result["summary"]["estimate_error"]["largest"][:3]
                print(
                    "    furthest off: "
                    + ", ".join(
                        f"{w['name']} {w['estimate_s']:.2f} s est. / {w['actual_s']:.2f} s"
                        for w in worst
                    )
                )

        print("policies, two workers, one real night each:")
        for policy in POLICIES:
            tonight(primary, rows, rng)
            caught_up(primary, replicas)
            with_c, without, old = predicted(two, state, policy)
            result = night(two, state, policy)
            makespans.append((with_c, without, result["summary"]["makespan_s"]))
            line(
                policy,
                result,
                f"  without contention {error_without(result, old):5.1f}%;"
                f" makespan predicted {with_c:.2f} s (without: {without:.2f} s)",
            )

        print("back to one worker after the two-worker nights (the setup changes):")
        tonight(primary, rows, rng)
        caught_up(primary, replicas)
        _, _, old = predicted(one, state, "sjf")
        result = night(one, state, "sjf")
        back = (result["summary"]["estimate_error"]["weighted_abs_pct"], error_without(result, old))
        line("sjf, 1 worker", result, f"  without contention {back[1]:5.1f}%")

        with StateStore.open(state) as store:
            contention = Estimator(History(store).samples("night", 20), 1000.0).contention.to_json()
        off = [abs(p - r) / r for p, _, r in makespans]
        off_before = [abs(b - r) / r for _, b, r in makespans]
        print(
            f"\nfigures: estimate error (duration-weighted) after 1, 3, {args.learn} nights:"
            + ", ".join(f" {errors[n][0]:.1f}%" for n in (1, 3, args.learn) if n in errors)
            + " (without contention:"
            + ", ".join(f" {errors[n][1]:.1f}%" for n in (1, 3, args.learn) if n in errors)
            + f"); back to one worker {back[0]:.1f}% (without contention {back[1]:.1f}%)."
            f" Two workers, predicted vs real makespan over {len(makespans)} nights:"
            f" median off {statistics.median(off):.1%}, worst {max(off):.1%}"
            f" (without contention: median {statistics.median(off_before):.1%},"
            f" worst {max(off_before):.1%}); contention measured {contention['factors']}"
            f" over {contention['jobs']} jobs."
        )
    finally:
        for server in (*replicas, primary):
            server.destroy()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
