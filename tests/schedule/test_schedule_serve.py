"""`govern schedule serve`: cron fires, misfire grace, coalescing, one night at a time, history
across restarts, graceful shutdown. APScheduler's clock is driven by the test: no long sleeps."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apscheduler.executors.base
import apscheduler.schedulers.base
import pytest

from govern.errors import GovernError
from govern.schedulers import service as night_service
from govern.schedulers.history import History
from govern.schedulers.service import NightService
from govern.state import StateStore
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, govern, govern_process, wait_until, worker_table

pytestmark = pytest.mark.server


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 0, 0, tzinfo=UTC)

    def set(self, *args: int) -> None:
        self.now = datetime(*args, tzinfo=UTC)  # type: ignore[misc]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The time APScheduler (and the service's notes) see; real time still runs the jobs."""
    fake = Clock()

    class FakeDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return fake.now.astimezone(tz) if tz is not None else fake.now.replace(tzinfo=None)

    for module in (apscheduler.schedulers.base, apscheduler.executors.base, night_service):
        monkeypatch.setattr(module, "datetime", FakeDatetime)
    return fake


def catalog(
    write_catalog: WriteCatalog, server: MariaDB, schedule: str, jobs: str | None = None
) -> Path:
    return write_catalog(
        'name = "nightly"\n'
        + "[schedule]\n"
        + schedule
        + "\n"
        + worker_table("main", server.defaults_file("govern_admin"))
        + (jobs or '[jobs.stamp]\ncommand = "echo $GOVERN_SCHEDULED_FOR >> fired.txt"\n'),
    )


DAILY = 'cron = "0 1 * * *"\ntimezone = "UTC"\nmisfire_grace = "1h"\n'


def nights(state_path: Path) -> list[dict[str, Any]]:
    with StateStore.open(state_path) as store:
        return sorted(History(store).nights(limit=100), key=lambda n: n["id"])


def done(state_path: Path, count: int) -> Callable[[], bool]:
    return lambda: (
        sum(n["status"] in ("ok", "failed", "interrupted") for n in nights(state_path)) >= count
    )


@pytest.fixture
def services() -> Iterator[list[NightService]]:
    started: list[NightService] = []
    yield started
    for service in started:
        if service.scheduler.running:
            service.shutdown(grace=0)


def serve(
    path: Path, state_path: Path, services: list[NightService], messages: list[str] | None = None
) -> NightService:
    service = NightService(
        path, state_path, notify=(messages if messages is not None else []).append
    )
    services.append(service)
    service.start()
    return service


def test_fires_at_the_cron_time_and_remembers_the_next(
    server: MariaDB,
    clock: Clock,
    tmp_path: Path,
    state_path: Path,
    services: list[NightService],
    write_catalog: WriteCatalog,
) -> None:
    path = catalog(write_catalog, server, DAILY)
    clock.set(2026, 3, 1, 0, 59)
    messages: list[str] = []
    service = serve(path, state_path, services, messages)
    assert "next night 2026-03-01T01:00:00+00:00" in messages[0]
    clock.set(2026, 3, 1, 1, 0, 5)
    service.scheduler.wakeup()
    wait_until(done(state_path, 1))
    [night] = nights(state_path)
    assert night["status"] == "ok" and night["trigger"] == "cron"
    assert night["scheduled_for"] == "2026-03-01T01:00:00+00:00"
    assert (tmp_path / "fired.txt").read_text() == "2026-03-01T01:00:00+00:00\n"
    wait_until(lambda: any("next night" in m for m in messages[1:]))
    said = "\n".join(messages)  # what serve prints as it goes, one line each
    assert "job stamp started on main" in said and "job stamp ok on main" in said
    assert "next night 2026-03-02T01:00:00+00:00" in messages[-1]
    service.shutdown()
    with StateStore.open(state_path) as store:
        remembered = History(store).remembered_fire("nightly", "cron 0 1 * * * UTC")
    assert remembered == "2026-03-02T01:00:00+00:00"


def test_restart_within_grace_runs_the_latest_night_and_coalesces_the_others(
    server: MariaDB,
    clock: Clock,
    tmp_path: Path,
    state_path: Path,
    services: list[NightService],
    write_catalog: WriteCatalog,
) -> None:
    path = catalog(write_catalog, server, DAILY)
    serve(path, state_path, services).shutdown()  # remembers 2026-03-01 01:00
    clock.set(2026, 3, 4, 1, 30)  # down for three nights; the last one is 30 min late
    serve(path, state_path, services)
    wait_until(done(state_path, 1))
    recorded = [(n["scheduled_for"][:10], n["status"]) for n in nights(state_path)]
    assert recorded == [
        ("2026-03-01", "coalesced"),
        ("2026-03-02", "coalesced"),
        ("2026-03-03", "coalesced"),
        ("2026-03-04", "ok"),
    ]
    assert nights(state_path)[0]["note"] == "folded into the night of 2026-03-04T01:00:00+00:00"
    assert (tmp_path / "fired.txt").read_text() == "2026-03-04T01:00:00+00:00\n"


def test_beyond_misfire_grace_the_night_is_missed(
    server: MariaDB,
    clock: Clock,
    tmp_path: Path,
    state_path: Path,
    services: list[NightService],
    write_catalog: WriteCatalog,
) -> None:
    path = catalog(write_catalog, server, DAILY)
    clock.set(2026, 3, 1, 0, 30)
    serve(path, state_path, services).shutdown()
    clock.set(2026, 3, 1, 3, 0)  # two hours late, grace one hour
    service = serve(path, state_path, services)
    wait_until(lambda: any(n["status"] == "missed" for n in nights(state_path)))
    [missed] = nights(state_path)
    assert missed["scheduled_for"] == "2026-03-01T01:00:00+00:00"
    assert missed["note"] == "7200s late, beyond misfire_grace 3600s"
    assert not (tmp_path / "fired.txt").exists()
    job = service.scheduler.get_job("night")
    assert job.next_run_time.isoformat() == "2026-03-02T01:00:00+00:00"


def test_without_coalescing_each_missed_night_runs_for_its_own_day(
    server: MariaDB,
    clock: Clock,
    tmp_path: Path,
    state_path: Path,
    services: list[NightService],
    write_catalog: WriteCatalog,
) -> None:
    path = catalog(
        write_catalog,
        server,
        'cron = "0 1 * * *"\ntimezone = "UTC"\nmisfire_grace = "3d"\ncoalesce = false\n',
    )
    serve(path, state_path, services).shutdown()
    clock.set(2026, 3, 3, 1, 10)
    serve(path, state_path, services)
    wait_until(done(state_path, 3))
    assert (tmp_path / "fired.txt").read_text().splitlines() == [
        "2026-03-01T01:00:00+00:00",
        "2026-03-02T01:00:00+00:00",
        "2026-03-03T01:00:00+00:00",
    ]
    assert [n["status"] for n in nights(state_path)] == ["ok", "ok", "ok"]


def test_never_two_nights_at_once(
    server: MariaDB,
    clock: Clock,
    tmp_path: Path,
    state_path: Path,
    services: list[NightService],
    write_catalog: WriteCatalog,
) -> None:
    path = catalog(
        write_catalog,
        server,
        'cron = "* * * * *"\ntimezone = "UTC"\nmisfire_grace = "30s"\n',
        '[jobs.hold]\ncommand = "touch started; while [ ! -e release ]; do sleep 0.05; done"\n',
    )
    clock.set(2026, 3, 1, 0, 0, 30)
    service = serve(path, state_path, services)
    clock.set(2026, 3, 1, 0, 1, 1)
    service.scheduler.wakeup()
    wait_until(lambda: (tmp_path / "started").exists())
    clock.set(2026, 3, 1, 0, 2, 1)  # the next fire while the first night still runs
    service.scheduler.wakeup()
    wait_until(lambda: any(n["status"] == "skipped" for n in nights(state_path)))
    (tmp_path / "release").touch()
    wait_until(done(state_path, 1))
    recorded = [(n["scheduled_for"], n["status"], n["note"]) for n in nights(state_path)]
    assert recorded == [
        ("2026-03-01T00:01:00+00:00", "ok", None),
        ("2026-03-01T00:02:00+00:00", "skipped", "the previous night was still running"),
    ]


def test_one_service_per_state_file_and_catalog(
    server: MariaDB,
    clock: Clock,
    state_path: Path,
    services: list[NightService],
    write_catalog: WriteCatalog,
) -> None:
    path = catalog(write_catalog, server, DAILY)
    serve(path, state_path, services)
    second = NightService(path, state_path, notify=lambda m: None)
    with pytest.raises(GovernError, match="already serves this catalog") as refused:
        second.start()
    assert refused.value.exit_code == 3  # as a second `schedule run` meets the run lock
    second.store.close()
    proc = govern("schedule", "serve", str(path), "--state", str(state_path), timeout=30)
    assert proc.returncode == 3
    (line,) = proc.stderr.splitlines()  # refused: it never served, so it never "stopped"
    assert line.startswith("govern: error: another `govern schedule serve` (pid ")


def test_serve_needs_a_schedule(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin")) + '[jobs.a]\ncommand = "true"\n',
    )
    proc = govern("schedule", "serve", str(path), "--state", str(state_path), timeout=30)
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"govern: error: {path}: serve needs a [schedule] table with a cron line"
    )


def test_sigterm_is_a_graceful_shutdown(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """A real `govern schedule serve` process: the night it owes (remembered fire time in the past,
    within grace) starts at once; SIGTERM lets a running job finish within shutdown_grace and
    stops the one still running when the grace ends.

    The quick job is certainly running when SIGTERM arrives: it waits for a file the test
    writes only after sending the signal. Its "ok" is the grace honoured; the slow job's
    "interrupted" (it sleeps 60 s) is the grace ended. No wall-clock bound is asserted."""
    path = catalog(
        write_catalog,
        server,
        'cron = "0 1 * * *"\ntimezone = "UTC"\nmisfire_grace = "1h"\nshutdown_grace = "2s"\n',
        '[jobs.quick]\ncommand = "touch quick.started; until [ -e go ]; do sleep 0.05; done"\n'
        + '[jobs.slow]\ncommand = "touch slow.started; exec sleep 60"\n'
        + '[jobs.later]\ncommand = "true"\ndepends_on = ["quick", "slow"]\n',
    ).resolve()
    text = path.read_text().replace("concurrency = 1", "concurrency = 2")
    path.write_text(text)
    with StateStore.open(state_path) as store:
        owed = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
        History(store).remember_fire("nightly", "cron 0 1 * * * UTC", owed)
    proc = govern_process("schedule", "serve", str(path), "--state", str(state_path), cwd=tmp_path)
    try:
        wait_until(
            lambda: (tmp_path / "quick.started").exists() and (tmp_path / "slow.started").exists()
        )
        proc.send_signal(signal.SIGTERM)
        (tmp_path / "go").touch()
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "SIGTERM: finishing (shutdown_grace 2s)" in err and "stopped serving nightly" in err
    [night] = nights(state_path)
    jobs = {j["name"]: j["outcome"] for j in night["jobs"]}
    assert night["status"] == "interrupted" and night["scheduled_for"] == owed
    assert jobs == {"quick": "ok", "slow": "interrupted", "later": "skipped"}
    history = govern("schedule", "history", "--state", str(state_path), "--json", check=True)
    assert json.loads(history.stdout)["nights"][0]["status"] == "interrupted"
