"""Nightly scheduling policies on the example's heavy-tailed workload: real nights, then replays.

    .venv/bin/python benchmarks/schedule_policies.py [--rows 1000000] [--types 96] [--zipf 1.3]

Starts a throwaway primary and replica (tests/harness.py), loads examples/nightly's
day of Zipf-distributed events, and runs the summary builds for real:

- one worker (the replica): SJF vs FIFO, share of summaries done at 50% of the makespan
  (the origin story: "in 50% of the time, 97% of all summaries are done");
- two workers (primary and replica): makespan of two-ended vs SJF vs LJF.

Then replays every policy on the recorded durations (no noise from a shared machine)
and on synthetic lognormal sizes, and prints the figures beside the origin story's 97%.
Both servers are destroyed at the end.
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
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.harness

from govern.schedulers.catalog import load_catalog  # noqa: E402
from govern.schedulers.compare import catalog_lanes, compare_policies, recorded_inputs  # noqa: E402
from govern.schedulers.night import run_night  # noqa: E402
from govern.schedulers.policies import Task, make_lanes  # noqa: E402
from govern.schedulers.simulate import simulate  # noqa: E402
from govern.state import StateStore  # noqa: E402
from tests.harness import MariaDB  # noqa: E402

EXAMPLE = REPO / "examples" / "nightly"
ORIGIN_STORY = 0.97


def catalog_text(primary_cnf: Path, workers: dict[str, Path]) -> str:
    """The example's catalog on these servers, summaries only (no totals job, no lag guard)."""
    text = (EXAMPLE / "summaries.toml").read_text()
    head = text.split("[schedule]")[0]
    sizing = head[head.index("[sizing]") :]
    lines = ['name = "bench"', 'policy = "sjf"', "", sizing.strip(), ""]
    lines += ["[primary]", f'defaults_file = "{primary_cnf}"', ""]
    for name, cnf in workers.items():
        lines += [f"[workers.{name}]", f'defaults_file = "{cnf}"', ""]
    lines += ["[each.summary]", f'command = ["{EXAMPLE / "job.sh"}", "{{key}}"]', 'timeout = "30m"']
    lines += ["wrap = true", "opts_out = true"]  # as the example: session mode
    return "\n".join(lines) + "\n"


def wait_caught_up(primary: MariaDB, replica: MariaDB, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    with primary.connect().cursor() as cur:  # type: ignore[attr-defined]
        cur.execute("SELECT @@gtid_binlog_pos")
        target = cur.fetchone()[0]
    while time.monotonic() < deadline:
        with replica.connect().cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SELECT @@gtid_slave_pos")
            if cur.fetchone()[0] == target:
                return
        time.sleep(0.5)
    raise SystemExit("the replica did not catch up")


def night(path: Path, state: Path, policy: str) -> dict[str, Any]:
    with StateStore.open(state) as store:
        result = run_night(
            load_catalog(path), store, policy=policy, show_progress=False, notify=lambda m: None
        )
    if result["status"] != "ok":
        failed = [(j["name"], j["reason"]) for j in result["jobs"] if j["outcome"] != "ok"]
        raise SystemExit(f"night failed: {failed[:3]}")
    return result


def describe(label: str, result: dict[str, Any]) -> dict[str, Any]:
    s = result["summary"]
    row = {
        "run": label,
        "makespan_s": s["makespan_s"],
        "mean_completion_s": s["mean_completion_s"],
        "done_at_half": s["done_at_half_makespan"],
    }
    print(
        f"  {label:<28} makespan {s['makespan_s']:7.1f} s   mean completion {s['mean_completion_s']:6.1f} s"
        f"   done at 50% of makespan {s['done_at_half_makespan']:6.1%}",
        flush=True,
    )
    return row


def synthetic(sigma: float, trials: int, jobs: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    sjf_share, fifo_share, te_share, te_vs_lpt, sjf_vs_lpt = [], [], [], [], []
    one, two = make_lanes([("w", 1, None)]), make_lanes([("a", 1, None), ("b", 1, None)])
    for _ in range(trials):
        tasks = [Task(f"j{i}", i, rng.lognormvariate(0, sigma)) for i in range(jobs)]
        sjf_share.append(simulate("sjf", tasks, one).metrics.done_share_at(0.5))
        fifo_share.append(simulate("fifo", tasks, one).metrics.done_share_at(0.5))
        lpt = simulate("ljf", tasks, two).metrics.makespan
        te = simulate("two-ended", tasks, two).metrics
        te_share.append(te.done_share_at(0.5))
        te_vs_lpt.append(te.makespan / lpt)
        sjf_vs_lpt.append(simulate("sjf", tasks, two).metrics.makespan / lpt)
    return {
        "sjf_share": statistics.fmean(sjf_share),
        "fifo_share": statistics.fmean(fifo_share),
        "two_ended_share": statistics.fmean(te_share),
        "two_ended_vs_lpt": statistics.fmean(te_vs_lpt),
        "two_ended_vs_lpt_worst": max(te_vs_lpt),
        "sjf_vs_lpt": statistics.fmean(sjf_vs_lpt),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--types", type=int, default=96)
    parser.add_argument("--zipf", type=float, default=1.3)
    parser.add_argument("--keep", action="store_true", help="keep the servers' directory")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="govern-bench-schedule-"))
    primary, replica = MariaDB(base / "primary"), MariaDB(base / "replica", server_id=2)
    try:
        primary.start()
        replica.start()
        replica.start_replica_of(primary)
        print(
            f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f};"
            f" MariaDB primary :{primary.port}, replica :{replica.port}",
            flush=True,
        )
        started = time.monotonic()
        load = subprocess.run(
            [sys.executable, str(EXAMPLE / "load.py"), "--defaults-file", str(primary.defaults_file("govern_admin")),
             "--rows", str(args.rows), "--types", str(args.types), "--zipf", str(args.zipf)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        print(load.stdout.strip(), f"({time.monotonic() - started:.0f} s)", flush=True)
        wait_caught_up(primary, replica)
        primary_cnf = primary.defaults_file("govern_admin")
        replica_cnf = replica.defaults_file("govern_admin")
        one = base / "one-worker.toml"
        one.write_text(catalog_text(primary_cnf, {"replica": replica_cnf}))
        two = base / "two-workers.toml"
        two.write_text(catalog_text(primary_cnf, {"primary": primary_cnf, "replica": replica_cnf}))
        state = base / "state.db"

        print("warm-up night (buffer pools; estimates learned from it)", flush=True)
        describe("warm-up, two workers, sjf", night(two, state, "sjf"))
        print("one worker (the replica):", flush=True)
        sjf1 = night(one, state, "sjf")
        rows = [describe("sjf", sjf1), describe("fifo", night(one, state, "fifo"))]
        print("two workers (primary and replica):", flush=True)
        for policy in ("two-ended", "sjf", "ljf"):
            rows.append(describe(policy, night(two, state, policy)))

        print("\nreplayed on the durations recorded by the one-worker SJF night:", flush=True)
        catalog = load_catalog(one)
        tasks, durations, _ = recorded_inputs(catalog, sjf1)
        for workers in (1, 2):
            lanes, _ = catalog_lanes(catalog, workers)
            report = compare_policies(
                catalog, tasks, durations, lanes, source="recorded", uniform=True
            )
            print(
                f"  {workers} worker(s), lower bound on makespan {report['makespan_lower_bound_s']:.1f} s"
            )
            for p in report["policies"]:
                print(
                    f"    {p['policy']:<10} makespan {p['makespan_s']:7.1f} s   mean completion"
                    f" {p['mean_completion_s']:6.1f} s   done at 50% {p['done_at_half_makespan']:6.1%}"
                )
        print("\nsynthetic lognormal sizes, 200 jobs, 30 trials each:", flush=True)
        for sigma in (0.5, 1.0, 2.0):
            s = synthetic(sigma, 30, 200, seed=int(sigma * 10))
            print(
                f"  sigma {sigma:3.1f}: 1 worker done at 50%: sjf {s['sjf_share']:.1%} fifo {s['fifo_share']:.1%};"
                f" 2 workers: two-ended done at 50% {s['two_ended_share']:.1%}, makespan vs LPT"
                f" {s['two_ended_vs_lpt']:.3f} (worst {s['two_ended_vs_lpt_worst']:.3f}), sjf vs LPT {s['sjf_vs_lpt']:.3f}"
            )
        share_sjf, share_fifo = rows[0]["done_at_half"], rows[1]["done_at_half"]
        te, sjf2, ljf2 = (r["makespan_s"] for r in rows[2:5])
        print(
            f"\nfigures: one worker, done at 50% of the makespan: SJF {share_sjf:.1%} vs FIFO {share_fifo:.1%}"
            f" (origin story {ORIGIN_STORY:.0%}; SJF/FIFO {share_sjf / share_fifo:.2f}x)."
            f" Two workers, makespan: two-ended {te:.1f} s, SJF {sjf2:.1f} s, LJF {ljf2:.1f} s"
            f" (two-ended/LJF {te / ljf2:.3f}, SJF/LJF {sjf2 / ljf2:.3f})."
        )
    finally:
        for server in (replica, primary):
            if args.keep:
                server.stop()
            else:
                server.destroy()
        if not args.keep:
            import shutil

            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
