"""What ``govern run`` adds to a job's wall time, next to the script it replaces.

    .venv/bin/python benchmarks/run_overhead.py [--runs 40] [--server-dir DIR]

Starts a throwaway MariaDB (tests/harness.py) unless --server-dir names a running
harness server, then times, round-robin so that machine noise hits all alike:

* ``true`` alone (the baseline: fork/exec and the timer);
* ``govern run -- true`` over the socket in each mode, and over TCP;
* the reference: the DBA's toggle script (``mariadb -e 'SET GLOBAL … OFF'; true;
  mariadb -e 'SET GLOBAL … ON'``), which is neither crash-safe nor overlap-safe;
* Python start-up alone and the import of the ``run`` path.

Prints medians, what each adds over ``true``, its ratio to the toggle script, and
the CPU time used (the steadier figure on a shared machine).

It measures what users get: a regular ``pip install`` of this checkout into a
throwaway venv (dependencies from pip's cache or PyPI), bytecode compiled at install.
A development venv is slower to start: its editable-install finder alone costs about
8 ms per start, and an environment with PYTHONDONTWRITEBYTECODE recompiles every
module every time. ``--python .venv/bin/python`` measures that one instead.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.harness

from tests.harness import MariaDB  # noqa: E402


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds, and CPU seconds (user + system) of the command's reaped processes.

    CPU time is the steadier figure on a shared machine: other people's load stretches
    the wall clock, not the work done.
    """
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {result.stderr.decode()}")
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--server-dir", type=Path, help="a running harness server to use")
    parser.add_argument("--python", type=Path, help="an interpreter with govern installed")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="govern-bench-run-"))
    python = args.python or install(work / "venv")
    server = MariaDB(args.server_dir or work / "server")
    own_server = args.server_dir is None
    server.start()
    try:
        return measure(server, work, args.runs, str(python))
    finally:
        if own_server:
            server.destroy()
        shutil.rmtree(work, ignore_errors=True)


def install(venv: Path) -> Path:
    """A regular (not editable) install of this checkout, as ``pip install .`` gives users."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(REPO)],
        check=True,
    )
    return venv / "bin" / "python"


def measure(server: MariaDB, work: Path, runs: int, python: str) -> int:
    root = server.connect()
    with root.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute("SET GLOBAL slow_query_log = ON, GLOBAL long_query_time = 1")
    socket_cnf = server.defaults_file("govern_admin", tcp=False)
    tcp_cnf = server.defaults_file("govern_admin", tcp=True)
    script = Path(python).parent / "govern"  # the console script users type
    govern = [str(script), "run", "-q", "--state", str(work / "state.db")]
    toggle = (
        f"mariadb --defaults-file={socket_cnf} -e 'SET GLOBAL slow_query_log = OFF'; true; "
        f"mariadb --defaults-file={socket_cnf} -e 'SET GLOBAL slow_query_log = ON'"
    )
    commands: dict[str, list[str]] = {
        "true": ["true"],
        "python -c pass": [python, "-c", "pass"],
        "python: import the run path": [
            python,
            "-c",
            "import govern.cli, wrappers.cli, wrappers.runner",
        ],
        "toggle script (reference)": ["sh", "-c", toggle],
        "govern run -- true (auto: threshold)": [
            *govern,
            "--defaults-file",
            str(socket_cnf),
            "--",
            "true",
        ],
        "govern run --mode global -- true": [
            *govern,
            "--defaults-file",
            str(socket_cnf),
            "--mode",
            "global",
            "--",
            "true",
        ],
        "govern run --mode session -- true": [
            *govern,
            "--defaults-file",
            str(socket_cnf),
            "--mode",
            "session",
            "--",
            "true",
        ],
        "govern run -- true, over TCP": [*govern, "--defaults-file", str(tcp_cnf), "--", "true"],
    }
    env = dict(os.environ)
    samples: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for command in commands.values():  # warm the page cache once
        timed(command, env)
    for _ in range(runs):
        for name, command in commands.items():
            wall, used = timed(command, env)
            samples[name].append(wall)
            cpu[name].append(used)
    with root.cursor() as cur:  # type: ignore[attr-defined]
        cur.execute("SELECT @@GLOBAL.slow_query_log, @@GLOBAL.long_query_time")
        assert cur.fetchone() == (1, 1.0), "a run left the server changed"
    root.close()  # type: ignore[attr-defined]

    base = statistics.median(samples["true"])
    reference = statistics.median(samples["toggle script (reference)"]) - base
    print(f"{python}: {runs} runs each, round-robin")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")
    print(f"{'command':40} {'median':>9} {'p90':>9} {'added':>9} {'÷ toggle':>9} {'CPU':>9}")
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        added = median - base
        ratio = f"{added / reference:8.2f}x" if name != "true" and reference > 0 else ""
        used = statistics.median(cpu[name])
        print(
            f"{name:40} {median * 1000:7.1f}ms {p90 * 1000:7.1f}ms {added * 1000:7.1f}ms"
            f" {ratio:>9} {used * 1000:7.1f}ms"
        )
    added_run = statistics.median(samples["govern run -- true (auto: threshold)"]) - base
    print(f"\ngovern run -- true adds {added_run * 1000:.1f} ms over true (target: under 100 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
