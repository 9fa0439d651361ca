"""What deadlines, pools and hooks cost and change: no server needed.

    .venv/bin/python benchmarks/schedule_control.py [--jobs 1000] [--hooks 20]

- pools: a heavy-tailed catalog (lognormal sizes, sigma 1.5) on two workers of two lanes,
  half its jobs in a pool of 2 (writers to one primary): simulated makespan and share done at
  half the night, with and without the pool, against the pool's own lower bound
  (pool work / 2);
- deadlines: the runner's per-tick check with every job holding a deadline not yet due
  (the common case): microseconds per tick;
- hooks: time from ``fire`` to a delivered event, per target: a command (``cat``) and a
  webhook POSTed to a local http.server; median and worst of N.
"""

from __future__ import annotations

import argparse
import http.server
import random
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from govern.schedulers.catalog import load_catalog  # noqa: E402
from govern.schedulers.deadlines import Due  # noqa: E402
from govern.schedulers.hooks import Hooks, make_event  # noqa: E402
from govern.schedulers.policies import Task, make_lanes  # noqa: E402
from govern.schedulers.runner import NightResult, NightRunner  # noqa: E402
from govern.schedulers.simulate import simulate  # noqa: E402


def pools(jobs: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    lanes = make_lanes([("replica1", 2, None), ("replica2", 2, None)])
    tasks = [
        Task(f"j{i}", i, rng.lognormvariate(0, 1.5), pool="writes" if i % 2 else None)
        for i in range(jobs)
    ]
    pooled = sum(t.estimate or 0 for t in tasks if t.pool)
    print(f"pools: {jobs} jobs, {len(lanes)} lanes, half of them in pool 'writes'")
    for policy in ("sjf", "two-ended"):
        for cap in (None, 2, 1):
            started = time.perf_counter()
            timeline = simulate(policy, tasks, lanes, pools={"writes": cap} if cap else None)
            took = time.perf_counter() - started
            metrics = timeline.metrics
            label = f"cap {cap}" if cap else "no pool"
            bound = f", pool bound {pooled / cap:.0f}s" if cap else ""
            print(
                f"  {policy:9} {label:8} makespan {metrics.makespan:8.0f}s"
                f"  done at half {metrics.done_share_at(0.5):6.1%}"
                f"  simulated in {took:.2f}s{bound}"
            )


class _Quiet(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def deadlines(jobs: int, ticks: int = 2000) -> None:
    """The cost of ``_check_deadlines`` per tick when no deadline is due yet."""
    runner = NightRunner.__new__(NightRunner)
    later = datetime.now(UTC) + timedelta(hours=6)
    runner.due = Due(later, {f"j{i}": later + timedelta(seconds=i) for i in range(jobs)})
    runner._deadlines = sorted((d, n) for n, d in runner.due.jobs.items())
    runner.result = NightResult({}, {}, {}, stopped=False)
    started = time.perf_counter()
    for _ in range(ticks):
        runner._check_deadlines(1.0)
    per_tick = (time.perf_counter() - started) / ticks
    print(f"deadlines: {jobs} jobs with a deadline, {per_tick * 1e6:.1f} us per 50 ms tick")


def hooks(count: int) -> None:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.toml"
        path.write_text(
            '[workers.w]\nhost = "127.0.0.1"\n[jobs.a]\ncommand = "true"\n'
            '[hooks.on_failure]\ncommand = "cat > /dev/null"\n'
            f'[hooks.on_deadline_miss]\nwebhook = "http://127.0.0.1:{httpd.server_address[1]}/x"\n'
        )
        catalog = load_catalog(path)
        for event, target in (("failure", "command"), ("deadline_miss", "webhook")):
            times = []
            for _ in range(count):
                sink = Hooks(catalog)
                started = time.perf_counter()
                sink.fire(make_event(event, catalog, reason="benchmark"))
                fired = time.perf_counter() - started
                sink.wait()
                times.append(time.perf_counter() - started)
                assert all(d["ok"] for d in sink.fired[0]["deliveries"]), sink.fired
            print(
                f"hooks: {target:8} delivered in median {statistics.median(times) * 1000:.1f} ms,"
                f" worst {max(times) * 1000:.1f} ms ({count} events); fire() itself returned in"
                f" {fired * 1000:.2f} ms"
            )
    httpd.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--hooks", type=int, default=20)
    args = parser.parse_args()
    pools(args.jobs)
    deadlines(args.jobs)
    hooks(args.hooks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
