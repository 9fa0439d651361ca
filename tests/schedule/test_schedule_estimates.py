"""Estimates that know the setup: completion times to the millisecond, durations per
(job, worker) with contention divided out, the measured contention factor, and the
duration-weighted estimate error."""

from __future__ import annotations

import itertools
import statistics
from pathlib import Path
from typing import Any

import pytest

from govern.schedulers.catalog import load_catalog
from govern.schedulers.night import run_night
from govern.state import StateStore
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, worker_table


def night(path: Path, state: Path, **kwargs: Any) -> dict[str, Any]:
    with StateStore.open(state) as store:
        return run_night(
            load_catalog(path), store, show_progress=False, notify=lambda m: None, **kwargs
        )


@pytest.mark.server
def test_completion_times_have_no_tick_and_no_floor(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """A 5 ms job is recorded under 20 ms (51-53 ms before: a 50 ms tick, and the history's
    commit counted in the job's time), none near the old 55-70 ms floor, the next job
    starts as the last one ends, and a 0.3 s job is recorded within 20 ms of 0.3 s.
    Seven tiny jobs: on the shared 2-core machine (load 7) starting setpriv and sleep
    alone takes 12-24 ms, so the fastest is held to 20 ms and the median to 30 ms."""
    tiny = "".join(f'[jobs.tiny{i}]\ncommand = ["sleep", "0.005"]\n' for i in range(7))
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + tiny
        + '[jobs.slow]\ncommand = ["sleep", "0.3"]\n'
    )
    result = night(path, state_path, policy="fifo")
    assert result["status"] == "ok"
    jobs = sorted(result["jobs"], key=lambda j: j["start_s"])
    tinies = [j["actual_s"] for j in jobs if j["name"].startswith("tiny")]
    assert 0.005 <= min(tinies) < 0.020, tinies
    assert statistics.median(tinies) < 0.030 and max(tinies) < 0.050, tinies
    slow = next(j for j in jobs if j["name"] == "slow")
    assert 0.3 <= slow["actual_s"] < 0.32, slow
    gaps = [b["start_s"] - a["finish_s"] for a, b in itertools.pairwise(jobs)]
    assert min(gaps) >= 0 and statistics.median(gaps) < 0.030, gaps
