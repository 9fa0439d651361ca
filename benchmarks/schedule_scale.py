"""How plan and simulate scale: catalogs of thousands of jobs with a 2,000-link chain.

    .venv/bin/python benchmarks/schedule_scale.py [--jobs 1250,2500,5000,10000] [--chain 2000]

Each catalog has ``--chain`` jobs in one depends_on chain, the rest independent with
heavy-tailed (lognormal) estimates, some restricted to one worker, on three workers
(two lanes each). Prints, per size: reading and checking the catalog, one simulation per
policy (all five), and the same simulations with the dispatcher of commit 319190b (a
rescan of every pending job per free lane, recursive skips) when git has it, so the
growth of both is side by side. With ``--defaults-file`` it also times the real CLI:
``govern schedule plan --json`` and ``govern schedule simulate --estimated`` against that
server (one worker per run, the catalog's rows fixed, no sizing query).
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from govern.schedulers.catalog import POLICIES, load_catalog  # noqa: E402
from govern.schedulers.compare import catalog_lanes  # noqa: E402
from govern.schedulers.policies import Task  # noqa: E402
from govern.schedulers.simulate import simulate  # noqa: E402

OLD_COMMIT = "319190b"


def catalog_text(jobs: int, chain: int, worker_cnf: str, seed: int = 1) -> str:
    rng = random.Random(seed)
    out = ['name = "scale"', 'policy = "sjf"', "[estimate]", "rows_per_second = 1000", ""]
    for name in ("r1", "r2", "r3"):
        out += [f"[workers.{name}]", f'defaults_file = "{worker_cnf}"', "concurrency = 2", ""]
    for i in range(jobs):
        rows = max(1, int(rng.lognormvariate(8, 2)))
        out += [f"[jobs.j{i}]", 'command = "true"', f"rows = {rows}"]
        if 0 < i < chain:
            out.append(f'depends_on = ["j{i - 1}"]')
        elif i >= chain and rng.random() < 0.1:
            out.append(f'workers = ["r{rng.randint(1, 3)}"]')
        out.append("")
    return "\n".join(out)


def old_simulate() -> types.ModuleType | None:
    """simulate() over the dispatcher of OLD_COMMIT, or None when git does not have it."""
    try:
        source = subprocess.run(
            ["git", "-C", str(REPO), "show", f"{OLD_COMMIT}:schedulers/dispatch.py"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    dispatch = types.ModuleType("old_dispatch")
    exec(compile(source, "old_dispatch.py", "exec"), dispatch.__dict__)
    spec = importlib.util.find_spec("govern.schedulers.simulate")
    assert spec is not None and spec.origin is not None
    simulation = types.ModuleType("old_simulate")
    text = Path(spec.origin).read_text()
    sys.modules["old_simulate"] = simulation  # dataclasses look their module up
    exec(compile(text, "old_simulate.py", "exec"), simulation.__dict__)
    simulation.__dict__["Dispatcher"] = dispatch.Dispatcher
    return simulation


def timed(call: object, *args: object) -> tuple[float, object]:
    start = time.perf_counter()
    result = call(*args)  # type: ignore[operator]
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", default="1250,2500,5000,10000")
    parser.add_argument("--chain", type=int, default=2000)
    parser.add_argument("--old-max", type=int, default=5000, help="largest size for the old code")
    parser.add_argument("--defaults-file", help="a server for the CLI timings (any account)")
    args = parser.parse_args()
    old = old_simulate()
    print(f"chain of {args.chain} links; 3 workers x 2 lanes; policies {', '.join(POLICIES)}")
    print(
        f"{'jobs':>6} {'load s':>8} {'simulate x5 s':>14} {'per policy s':>13}"
        f" {'old x5 s':>10} {'makespan sjf':>13}"
    )
    with tempfile.TemporaryDirectory() as folder:
        cnf = args.defaults_file or str(Path(folder) / "none.cnf")
        Path(cnf).touch()
        for jobs in [int(n) for n in args.jobs.split(",")]:
            path = Path(folder) / f"scale{jobs}.toml"
            path.write_text(catalog_text(jobs, min(args.chain, jobs), cnf))
            load_s, catalog = timed(load_catalog, path)
            tasks = [
                Task(j.name, j.order, float(j.rows or 0) / 1000, j.weight, j.depends_on, j.workers)
                for j in catalog.jobs  # type: ignore[attr-defined]
            ]
            lanes, _ = catalog_lanes(catalog, None)  # type: ignore[arg-type]
            start = time.perf_counter()
            timelines = [simulate(p, tasks, lanes) for p in POLICIES]
            new_s = time.perf_counter() - start
            old_text = "-"
            if old is not None and jobs <= args.old_max:
                start = time.perf_counter()
                try:
                    for policy in POLICIES:
                        old.simulate(policy, tasks, lanes)
                    old_text = f"{time.perf_counter() - start:.2f}"
                except RecursionError:
                    old_text = "Recursion"
            print(
                f"{jobs:>6} {load_s:>8.2f} {new_s:>14.2f} {new_s / len(POLICIES):>13.3f}"
                f" {old_text:>10} {timelines[1].metrics.makespan:>13.0f}"
            )
            if args.defaults_file:
                cli(path, Path(folder) / f"state{jobs}.db")


def cli(path: Path, state: Path) -> None:
    for command in (["plan", "--json"], ["simulate", "--estimated", "--json"]):
        start = time.perf_counter()
        argv = [sys.executable, "-m", "govern", "schedule", command[0], str(path)]
        done = subprocess.run(
            [*argv, *command[1:], "--state", str(state)],
            capture_output=True,
            text=True,
        )
        took = time.perf_counter() - start
        status = "ok" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr[-200:]}"
        print(f"       govern schedule {' '.join(command)}: {took:.2f} s wall ({status})")


if __name__ == "__main__":
    main()
