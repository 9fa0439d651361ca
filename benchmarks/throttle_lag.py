"""Replica lag under batch writes, with and without the throttler, beside pt-archiver.

    .venv/bin/python benchmarks/throttle_lag.py [--rows 2000000] [--bound 2] [--interval 0.5]

Starts a throwaway primary and replica (tests/harness.py) and pt-heartbeat --update on the
primary (0.1 s), then prints:

1. replica lag over time (pt-heartbeat's, sampled every 0.25 s) for a ``govern load`` of
   ROWS rows without the throttler and with ``max_lag=BOUND`` (lag from the same
   heartbeat table), side by side, with the peak lag against the target: the bound plus
   one polling interval plus one batch's time;
2. the throughput cost of throttling when nothing holds: the same load with a check that
   never holds (max_lag=1h), alternated with unthrottled loads, ``--runs`` each;
3. a chunked purge of half the table: ``govern chunk`` with max_lag=BOUND beside
   ``pt-archiver --purge --bulk-delete --check-slave-lag --max-lag BOUND``, rows/s and
   peak lag.

Both servers are destroyed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.harness

from govern.batch.load import load_file  # noqa: E402
from govern.connection import connect, resolve_settings  # noqa: E402
from govern.server import detect  # noqa: E402
from govern.throttle import open_throttler, parse_items  # noqa: E402
from govern.throttle.lag import measure_lag  # noqa: E402
from tests.harness import MariaDB  # noqa: E402

HEARTBEAT = "percona.heartbeat"


def wait_caught_up(primary: MariaDB, replica: MariaDB, timeout: float = 1800) -> None:
    p: Any = primary.connect()
    with p.cursor() as cur:
        cur.execute("SELECT @@gtid_binlog_pos")
        target = cur.fetchone()[0]
    p.close()
    r: Any = replica.connect()
    with r.cursor() as cur:
        cur.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (target, timeout))
    r.close()


class LagSampler:
    """pt-heartbeat's lag on the replica every ``every`` seconds, in a thread."""

    def __init__(self, replica: MariaDB, every: float = 0.25) -> None:
        self.settings = resolve_settings(defaults_file=str(replica.defaults_file("root")))
        self.every = every
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> LagSampler:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        conn = connect(self.settings)
        info = detect(conn)
        while not self._stop.is_set():
            lag = measure_lag(conn, info, HEARTBEAT)
            if lag.seconds is not None:
                self.samples.append((time.monotonic() - self._t0, lag.seconds))
            self._stop.wait(self.every)
        conn.close()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    @property
    def peak(self) -> float:
        return max((lag for _, lag in self.samples), default=0.0)

    def above(self, bound: float) -> float:
        """Seconds sampled above ``bound``."""
        return sum(self.every for _, lag in self.samples if lag > bound)


def make_csv(path: Path, rows: int) -> None:
    with path.open("w") as out:
        out.write("id,k,note\n")
        pad = "x" * 60
        for start in range(1, rows + 1, 100_000):
            out.write(
                "".join(
                    f"{i},{i % 2},{pad}\n" for i in range(start, min(start + 100_000, rows + 1))
                )
            )


def reset(primary: MariaDB, replica: MariaDB) -> None:
    conn: Any = primary.connect()
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS app.bench_load")
        cur.execute(
            "CREATE TABLE app.bench_load (id INT PRIMARY KEY, k INT NOT NULL, note VARCHAR(64))"
        )
    conn.close()
    wait_caught_up(primary, replica)


def timed_load(
    primary: MariaDB, replica: MariaDB, csv: Path, items: list[str] | None
) -> tuple[float, float, LagSampler, dict[str, Any] | None, float]:
    """(seconds, rows/s, lag samples, throttle summary, seconds inside the throttler's
    pause) of one load of ``csv``."""
    reset(primary, replica)
    settings = resolve_settings(defaults_file=str(primary.defaults_file("root")))
    conn = connect(settings)
    throttle = (
        open_throttler(parse_items(items), settings, work="bench", notify=None) if items else None
    )
    spent = [0.0]
    if throttle is not None:
        pause = throttle.pause

        def timed_pause() -> float:
            began = time.perf_counter()
            waited = pause()
            spent[0] += time.perf_counter() - began
            return waited

        throttle.pause = timed_pause  # type: ignore[method-assign]
    with LagSampler(replica) as sampler:
        started = time.monotonic()
        report = load_file(conn, str(csv), "app.bench_load", key=["id"], throttle=throttle)
        seconds = time.monotonic() - started
        wait_caught_up(primary, replica)
    conn.close()
    if throttle is not None:
        throttle.close()
    assert report.complete and report.result.rows > 0, report.error
    return seconds, report.result.rows / seconds, sampler, report.throttle, spent[0]


def timeline(columns: dict[str, LagSampler], step: float = 2.0) -> None:
    end = max((s.samples[-1][0] if s.samples else 0.0) for s in columns.values())
    print(f"{'t (s)':>7} " + " ".join(f"{name:>22}" for name in columns))
    t = 0.0
    while t <= end + step:
        cells = []
        for sampler in columns.values():
            window = [lag for at, lag in sampler.samples if t <= at < t + step]
            cells.append(f"{max(window):>20.2f} s" if window else f"{'':>22}")
        print(f"{t:>7.0f} " + " ".join(cells))
        t += step


@contextlib.contextmanager
def heartbeat(primary: MariaDB) -> Iterator[None]:
    pt = shutil.which("pt-heartbeat")
    if pt is None:
        raise SystemExit("pt-heartbeat (percona-toolkit) is needed")
    conn: Any = primary.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS percona")
    conn.close()
    process = subprocess.Popen(
        [
            pt,
            f"--defaults-file={primary.defaults_file('root')}",
            "-D",
            "percona",
            "--create-table",
            "--update",
            "--interval",
            "0.1",
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        time.sleep(1)
        yield
    finally:
        process.terminate()
        process.wait()


def purge(
    primary: MariaDB, replica: MariaDB, rows: int, run: Callable[[], None]
) -> tuple[float, LagSampler]:
    conn: Any = primary.connect()
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS app.bench_purge")
        cur.execute(
            "CREATE TABLE app.bench_purge (id INT PRIMARY KEY, k INT NOT NULL, note VARCHAR(64))"
        )
        for start in range(1, rows + 1, 200_000):
            cur.execute(
                "INSERT INTO app.bench_purge SELECT seq, seq % 2, REPEAT('x', 60)"
                f" FROM app.seq_{start}_to_{min(start + 199_999, rows)}"
            )
    conn.close()
    wait_caught_up(primary, replica)
    with LagSampler(replica) as sampler:
        started = time.monotonic()
        run()
        seconds = time.monotonic() - started
        wait_caught_up(primary, replica)
    return seconds, sampler


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--bound", type=float, default=2.0, help="max_lag, seconds")
    parser.add_argument("--interval", type=float, default=1.0, help="polling interval, seconds")
    parser.add_argument("--runs", type=int, default=3, help="runs per side for the cost")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="govern-bench-throttle-"))
    primary, replica = MariaDB(base / "primary"), MariaDB(base / "replica", server_id=2)
    try:
        primary.start()
        # A replica with the server's default durability (the harness relaxes both): it
        # flushes its redo log and binlog at every commit, so a fast writer makes it lag.
        replica.options = {"innodb_flush_log_at_trx_commit": "1", "sync_binlog": "1"}
        replica.start()
        replica.start_replica_of(primary)
        csv = base / "rows.csv"
        make_csv(csv, args.rows)
        replica_cnf = replica.defaults_file("root")
        throttled = [
            f"max_lag={args.bound}s",
            f"replica={replica_cnf}",
            f"heartbeat_table={HEARTBEAT}",
            f"interval={args.interval}s",
        ]
        with heartbeat(primary):
            wait_caught_up(primary, replica)
            print(
                f"== 1. replica lag during a load of {args.rows:,} rows (pt-heartbeat, 0.25 s samples)"
            )
            plain_s, plain_rate, plain, _, _ = timed_load(primary, replica, csv, None)
            held_s, held_rate, held, summary, _ = timed_load(primary, replica, csv, throttled)
            timeline({"without throttle": plain, f"max_lag={args.bound:g}s": held})
            batch = held_s / max(args.rows / 100, 1)
            target = args.bound + args.interval + batch
            assert summary is not None
            print(
                f"without: {plain_s:.1f} s ({plain_rate:,.0f} rows/s), peak lag {plain.peak:.2f} s,"
                f" {plain.above(args.bound):.1f} s above {args.bound:g} s"
            )
            print(
                f"with:    {held_s:.1f} s ({held_rate:,.0f} rows/s), peak lag {held.peak:.2f} s,"
                f" {held.above(args.bound):.1f} s above {args.bound:g} s; {len(summary['holds'])}"
                f" holds, {summary['held_s']:.1f} s held; target: peak <= bound + interval +"
                f" one batch = {target:.3f} s: {'met' if held.peak <= target else 'NOT met'}"
            )

            print(
                f"\n== 2. cost when nothing holds (max_lag=1h), {args.runs} runs each, alternated"
            )
            never = [
                "max_lag=3600s",
                f"replica={replica_cnf}",
                f"heartbeat_table={HEARTBEAT}",
                f"interval={args.interval}s",
            ]
            rates: dict[str, list[float]] = {"without": [], "with": []}
            inside: list[float] = []
            for _ in range(args.runs):
                rates["without"].append(timed_load(primary, replica, csv, None)[1])
                seconds, rate, _, summary, spent = timed_load(primary, replica, csv, never)
                rates["with"].append(rate)
                inside.append(spent / seconds)
                assert summary is not None and not summary["holds"]
            without, with_ = statistics.median(rates["without"]), statistics.median(rates["with"])
            print(
                f"without: {', '.join(f'{r:,.0f}' for r in rates['without'])} rows/s, median {without:,.0f}"
            )
            print(
                f"with:    {', '.join(f'{r:,.0f}' for r in rates['with'])} rows/s, median {with_:,.0f}"
            )
            print(
                f"wall-clock difference: {100 * (without - with_) / without:+.1f}% (noise of a"
                " shared machine included); time inside the throttler:"
                f" {', '.join(f'{100 * share:.2f}%' for share in inside)} of each throttled load"
                " (target: under 3%)"
            )

            print(f"\n== 3. purge of half of {args.rows:,} rows with max lag {args.bound:g} s")

            def govern_chunk() -> None:
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "govern",
                        "chunk",
                        "DELETE FROM app.bench_purge WHERE k = 0",
                        "--defaults-file",
                        str(primary.defaults_file("root")),
                        "--state",
                        str(base / "state.db"),
                        *[part for item in throttled for part in ("--throttle", item)],
                    ],
                    check=True,
                    capture_output=True,
                )

            def pt_archiver() -> None:
                subprocess.run(
                    [
                        shutil.which("pt-archiver") or "pt-archiver",
                        "--source",
                        f"F={primary.defaults_file('root')},D=app,t=bench_purge,A=utf8mb4",
                        "--purge",
                        "--where",
                        "k = 0",
                        "--limit",
                        "1000",
                        "--bulk-delete",
                        "--commit-each",
                        "--check-slave-lag",
                        f"F={replica.defaults_file('root')},A=utf8mb4",
                        "--max-lag",
                        f"{args.bound:g}",
                        "--check-interval",
                        f"{max(args.interval, 1):g}",
                        "--no-version-check",
                    ],
                    check=True,
                    capture_output=True,
                )

            for name, run in (("govern chunk", govern_chunk), ("pt-archiver", pt_archiver)):
                seconds, sampler = purge(primary, replica, args.rows, run)
                print(
                    f"{name:>13}: {args.rows // 2:,} rows in {seconds:.1f} s"
                    f" ({args.rows // 2 / seconds:,.0f} rows/s), peak lag {sampler.peak:.2f} s,"
                    f" {sampler.above(args.bound):.1f} s above {args.bound:g} s"
                )
    finally:
        replica.destroy()
        primary.destroy()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
