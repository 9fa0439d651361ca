"""The throttler's decisions, on checks whose figures the test sets: polling at the
interval (never per batch), holds recorded with their worst value, critical and max_wait
stops; and the spec parser's errors. The server-facing checks are tested in
test_throttle_server.py against the real MariaDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from govern.errors import ConfigError, UsageError
from govern.throttle import ThrottleCritical, Throttler, ThrottleTimeout
from govern.throttle.checks import FlagFile, Reading, read_only_query
from govern.throttle.lag import LagTrend, projected_peak
from govern.throttle.spec import ThrottleSpec, config_spec, parse_items
from govern.throttle.throttler import EXIT_CRITICAL, EXIT_TIMEOUT, Hold


class Figure:
    """A check over a number the test sets: holds above ``bound``."""

    def __init__(self, key: str, bound: float) -> None:
        self.key = key
        self.bound = bound
        self.value = 0.0
        self.reads = 0

    def read(self) -> Reading:
        self.reads += 1
        holds = self.value > self.bound
        return Reading(
            self.key, "load", holds, f"{self.key} {self.value:g}", self.value, self.bound
        )

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.plan: list[tuple[float, Figure, float]] = []  # at this time, set figure to value

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        for at, figure, value in list(self.plan):
            if self.now >= at:
                figure.value = value
                self.plan.remove((at, figure, value))


class Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def opened(self, hold: Hold) -> None:
        self.events.append(("opened", hold.key))

    def closed(self, hold: Hold) -> None:
        self.events.append(("closed", hold.key))


def test_checks_are_polled_at_the_interval_not_per_batch() -> None:
    clock, figure = Clock(), Figure("threads", 10)
    throttler = Throttler([figure], interval=1.0, clock=clock, sleep=clock.sleep)
    for _ in range(50):  # 50 batches in 0.5 s
        assert throttler.pause() == 0
        clock.now += 0.01
    assert figure.reads == 1
    clock.now += 0.6
    throttler.pause()
    assert figure.reads == 2 and throttler.polls == 2


def test_a_hold_blocks_until_the_figure_falls_and_is_recorded_with_its_worst_value() -> None:
    clock, figure, log = Clock(), Figure("threads", 10), Log()
    messages: list[str] = []
    throttler = Throttler(
        [figure], interval=0.5, clock=clock, sleep=clock.sleep, log=log, notify=messages.append
    )
    figure.value = 30
    clock.plan = [(1.0, figure, 45), (2.0, figure, 5)]
    waited = throttler.pause()
    assert 2.0 <= waited <= 2.5
    assert figure.value == 5
    (hold,) = throttler.holds
    assert hold.value == 45 and hold.reason == "threads 45" and hold.ended is not None
    assert log.events == [("opened", "threads"), ("closed", "threads")]
    assert messages[0] == "throttle: holding: threads 30"
    assert messages[-1].startswith("throttle: going on after holding 2.")
    assert throttler.held_seconds == pytest.approx(waited, abs=0.01)


def test_each_check_holds_on_its_own_and_the_time_held_counts_overlaps_once() -> None:
    clock, a, b = Clock(), Figure("a", 0), Figure("b", 0)
    throttler = Throttler([a, b], interval=1.0, clock=clock, sleep=clock.sleep)
    a.value = 1
    clock.plan = [(1.0, b, 1), (2.0, a, 0), (4.0, b, 0)]
    waited = throttler.pause()
    assert [h.key for h in throttler.holds] == ["a", "b"]
    assert waited == pytest.approx(4.0)
    assert throttler.held_seconds == pytest.approx(4.0)
    summary = throttler.summary()
    assert summary["held_s"] == pytest.approx(4.0) and len(summary["holds"]) == 2


def test_max_wait_stops_the_work_with_exit_75() -> None:
    clock, figure = Clock(), Figure("threads", 0)
    figure.value = 1
    throttler = Throttler([figure], interval=1.0, max_wait=2.5, clock=clock, sleep=clock.sleep)
    with pytest.raises(ThrottleTimeout) as stop:
        throttler.pause()
    assert stop.value.exit_code == EXIT_TIMEOUT == 75
    assert 2.5 <= clock.now <= 3.0  # it never sleeps past max_wait by a whole interval
    assert all(h.ended is not None for h in throttler.holds)


def test_a_critical_flag_file_stops_at_once_with_exit_3(tmp_path: Path) -> None:
    stop_file = tmp_path / "stop"
    throttler = Throttler([FlagFile(str(stop_file), critical=True)], interval=0.0)
    throttler.pause()
    assert throttler.holds == []
    stop_file.write_text("")
    with pytest.raises(ThrottleCritical) as stop:
        throttler.pause()
    assert stop.value.exit_code == EXIT_CRITICAL == 3
    assert f"flag file {stop_file} exists" in stop.value.message
    (hold,) = throttler.holds
    assert hold.critical and hold.ended is not None


def test_a_flag_file_holds_while_it_exists(tmp_path: Path) -> None:
    flag = tmp_path / "hold"
    flag.write_text("")
    clock = Clock()
    throttler = Throttler([FlagFile(str(flag))], interval=0.5, clock=clock, sleep=clock.sleep)

    def sleep(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now >= 1.0:
            flag.unlink(missing_ok=True)

    throttler._sleep = sleep
    assert throttler.pause() == pytest.approx(1.0)
    assert throttler.holds[0].reason == f"flag file {flag} exists"


# --- the spec: one vocabulary, errors that name the item ---------------------------------------
def test_items_parse_into_a_spec_that_round_trips() -> None:
    spec = parse_items(
        [
            "max_lag=1500ms",
            "replica=db2:3307",
            "max-load=Threads_running=25,Threads_connected=400",
            "critical_load=Threads_running=200",
            "query=SELECT COUNT(*) FROM ops.freeze",
            "flag_file=/run/hold",
            "interval=250ms",
            "max_wait=1h",
        ]
    )
    assert spec.max_lag == 1.5 and spec.replicas == ("db2:3307",)
    assert spec.max_load == (("Threads_running", 25.0), ("Threads_connected", 400.0))
    assert spec.critical_load == (("Threads_running", 200.0),)
    assert spec.interval == 0.25 and spec.max_wait == 3600 and spec.flag_file == "/run/hold"
    assert parse_items(spec.items()) == spec
    assert ThrottleSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("max_lagg=2s", "unknown check 'max_lagg' (did you mean 'max_lag'?)"),
        ("max_lag", "expected KEY=VALUE"),
        ("max_lag=fast", "expected a duration"),
        ("max_load=Threads_running", "expected STATUS_VARIABLE=NUMBER"),
        ("max_load=Threads_running=many", "'many' is not a number"),
        ("query=DELETE FROM t", "only a plain SELECT"),
        ("query=SELECT 1; DROP TABLE t", "expected one SELECT statement, got 2"),
        ("query=SELECT * FROM t FOR UPDATE", "only a plain SELECT"),
        ("replica=db2", "replicas and heartbeat settings need max_lag"),
        ("interval=0", "must be at least 0.01 s"),
    ],
)
def test_bad_items_are_one_line_usage_errors(item: str, message: str) -> None:
    with pytest.raises(UsageError) as error:
        parse_items([item])
    assert message in error.value.message
    assert "\n" not in error.value.message


def test_a_select_with_into_is_not_a_read() -> None:
    assert read_only_query("WITH x AS (SELECT 1 AS n) SELECT n FROM x", "q").startswith("WITH")
    with pytest.raises(UsageError):
        read_only_query("SELECT 1 INTO @n", "query")


def test_the_nearest_config_file_gives_the_checks_with_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[tool.govern.throttle]\nmax_lag = "2s"\nmax_load = { Threads_running = 30 }\n'
        'flag_file = "hold.flag"\n'
    )
    monkeypatch.chdir(project / "jobs")
    spec = config_spec()
    assert spec is not None
    assert spec.max_lag == 2 and spec.max_load == (("Threads_running", 30.0),)
    assert spec.flag_file == str(project / "hold.flag")  # relative to the config file
    (project / "jobs" / "govern.toml").write_text('target = "mariadb-10.11"\n')
    assert config_spec() is None  # the nearest file wins whole: it has no [throttle]
    (project / "jobs" / "govern.toml").write_text('[throttle]\nmax_lag = "2s"\nmax_wiat = "1h"\n')
    with pytest.raises(ConfigError) as error:
        config_spec()
    assert error.value.message.startswith(f"{project / 'jobs' / 'govern.toml'}:3: unknown key")
    assert "did you mean 'max_wait'?" in error.value.message


def test_a_growing_lag_is_projected_to_where_the_backlog_takes_it() -> None:
    """A replica applying 60% as fast as the work writes: 1.2 s of lag becomes 2 s once the
    writes stop, so a 2 s bound holds at 1.2 s, not at 2 s (then 3.3 s)."""
    trend = LagTrend(window=2.0)
    growth = 0.0
    for step in range(9):  # every 0.5 s, the lag grows 0.2 s
        growth = trend.add(step * 0.5, 0.4 * step * 0.5)
    assert growth == pytest.approx(0.4)
    assert projected_peak(1.2, growth) == pytest.approx(2.0)
    assert projected_peak(2.0, growth) == pytest.approx(3.333, abs=0.001)
    assert projected_peak(1.5, -0.8) == 1.5  # falling: the lag is what it is
    assert projected_peak(0.3, 1.0) == float("inf")  # applying nothing
    fresh = LagTrend(window=2.0)
    assert fresh.add(0.0, 0.0) == 0 and fresh.add(0.5, 1.0) == 0  # too short a span to judge
    trend.reset()
    assert trend.add(10.0, 5.0) == 0
