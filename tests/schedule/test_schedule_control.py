"""Deadlines, pools, readiness and hooks (docs/schedule.md, "Deadlines, pools, readiness and
hooks"): real nights on the harness's primary and replica, hooks delivered to a command, a
local HTTP server and a fake sendmail on PATH."""

from __future__ import annotations

import email
import email.policy
import http.server
import json
import os
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from govern.errors import ConfigError
from govern.schedulers.catalog import load_catalog
from govern.schedulers.deadlines import parse_deadline
from govern.schedulers.dispatch import Dispatcher
from govern.schedulers.night import run_night
from govern.schedulers.policies import Task, make_lanes
from govern.schedulers.runner import StopRequest
from govern.schedulers.simulate import simulate
from govern.state import StateStore
from tests.docs.support import problems
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, govern, wait_until, worker_table
from tests.schedule.test_schedule_serve import (  # noqa: F401 - the fixtures, shared
    DAILY,
    Clock,
    clock,
    serve,
    services,
)

# --- the catalog -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '[pools]\nwrites = 2\n[jobs.a]\ncommand = "true"\npool = "write"\n',
            "5: job a: unknown pool 'write' (did you mean 'writes'?)",
        ),
        ('[pools]\nwrites = 0\n[jobs.a]\ncommand = "true"\n', "2: writes must be an integer >= 1"),
        (
            'deadline = "25:00"\n[jobs.a]\ncommand = "true"\n',
            '1: deadline: expected a clock time "HH:MM" or a duration',
        ),
        ('[jobs.a]\ncommand = "true"\n[hooks.on_failure]\n', "3: [hooks.on_failure] needs"),
        (
            '[jobs.a]\ncommand = "true"\n[hooks.on_failure]\nwebhook = "ftp://x"\n',
            "4: webhook must be an http:// or https:// URL",
        ),
        (
            '[jobs.a]\ncommand = "true"\n[hooks.on_failur]\nmail = "a@b"\n',
            "unknown key 'on_failur' in [hooks] (did you mean 'on_failure'?)",
        ),
        ('[jobs.a]\ncommand = "true"\n[ready_when]\ntimeout = "1m"\n', "[ready_when] needs query"),
        (
            '[jobs.a]\ncommand = "true"\n[ready_when]\nquery = "SELECT 1"\nserver = "nope"\n',
            "5: ready_when.server 'nope' is not a worker",
        ),
    ],
)
def test_catalog_mistakes_name_the_line(
    write_catalog: WriteCatalog, body: str, message: str
) -> None:
    path = write_catalog(body + '[workers.w]\nhost = "127.0.0.1"\n')
    with pytest.raises(ConfigError) as raised:
        load_catalog(path)
    assert f"{path}:" in raised.value.message
    assert message in raised.value.message, raised.value.message


def test_deadlines_resolve_from_the_scheduled_start() -> None:
    six = parse_deadline("06:00")
    paris = "Europe/Paris"
    fire = datetime(2026, 3, 2, 0, 30, tzinfo=UTC)  # 01:30 in Paris
    assert six.at(fire, paris).isoformat() == "2026-03-02T06:00:00+01:00"
    evening = datetime(2026, 3, 2, 22, 0, tzinfo=UTC)  # 23:00 in Paris: the next morning
    assert six.at(evening, paris).isoformat() == "2026-03-03T06:00:00+01:00"
    assert parse_deadline("3h").at(fire).isoformat() == "2026-03-02T03:30:00+00:00"
    assert parse_deadline("06:00:30").clock == (6, 0, 30)
    with pytest.raises(ValueError, match="clock time"):
        parse_deadline("6 o'clock")


def test_templates_and_defaults_hand_down_deadline_and_pool(write_catalog: WriteCatalog) -> None:
    path = write_catalog(
        """
        deadline = "06:00"
        [pools]
        writes = 1
        [defaults]
        deadline = "05:00"
        [workers.w]
        host = "127.0.0.1"
        [each.summary]
        command = ["true", "{key}"]
        pool = "writes"
        [jobs.totals]
        command = "true"
        deadline = "2h"
        """
    )
    catalog = load_catalog(path)
    expanded, _ = catalog.expand(["a", "b"])
    by_name = {j.name: j for j in expanded.jobs}
    assert catalog.deadline is not None and catalog.deadline.clock == (6, 0, 0)
    assert by_name["summary.a"].pool == "writes"
    assert by_name["summary.b"].deadline is not None
    assert by_name["summary.b"].deadline.text == "05:00"
    assert by_name["totals"].deadline is not None and by_name["totals"].deadline.after == 7200
    assert by_name["totals"].pool is None


# --- pools in the dispatcher and the simulator ----------------------------------------------------


def test_a_pool_caps_the_simulated_night_across_lanes() -> None:
    lanes = make_lanes([("a", 2, None), ("b", 2, None)])
    tasks = [Task(f"w{i}", i, 10.0, pool="writes") for i in range(6)]
    tasks += [Task(f"r{i}", 10 + i, 1.0) for i in range(4)]
    timeline = simulate("fifo", tasks, lanes, pools={"writes": 2})
    writes = [p for p in timeline.placements if p.name.startswith("w")]
    assert _max_overlap([(p.start, p.finish) for p in writes]) == 2
    assert timeline.metrics.makespan == pytest.approx(30.0)  # 6 jobs of 10 s, 2 at a time
    free = simulate("fifo", tasks, lanes)
    assert free.metrics.makespan == pytest.approx(20.0)
    assert len(timeline.placements) == 10


def test_a_pool_slot_is_given_back_on_failure_and_retry() -> None:
    lanes = make_lanes([("a", 3, None)])
    dispatcher = Dispatcher(
        "fifo", [Task(f"j{i}", i, 1.0, pool="p") for i in range(3)], lanes, {"p": 1}
    )
    first = dispatcher.take(lanes[0])
    assert first is not None and dispatcher.take(lanes[1]) is None
    dispatcher.retry(first.name, 0.0)
    second = dispatcher.take(lanes[1])
    assert second is not None and dispatcher.take(lanes[2]) is None
    dispatcher.fail(second.name)
    assert dispatcher.take(lanes[2]) is not None


def _max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans open at once (an end at the instant another starts does not overlap)."""
    edges = sorted(
        [(s, 1) for s, _ in spans] + [(f, -1) for _, f in spans], key=lambda e: (e[0], e[1])
    )
    most = running = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


# --- real nights ----------------------------------------------------------------------------------


def night(path: Path, state: Path, **kwargs: Any) -> dict[str, Any]:
    with StateStore.open(state) as store:
        return run_night(
            load_catalog(path), store, show_progress=False, notify=lambda m: None, **kwargs
        )


@pytest.mark.server
def test_a_pool_caps_a_real_night_across_workers(
    server: MariaDB, replica: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    """Two workers (primary and replica) of two lanes each: four of the pool's jobs could run at
    once (two on each), the pool lets two; the free jobs show the four lanes are really used."""
    jobs = "".join(
        f'[jobs.write{i}]\ncommand = "sleep 0.6"\npool = "primary_writes"\n'
        f'workers = ["{"primary" if i % 2 else "replica"}"]\n'  # both workers could run 2 each
        for i in range(6)
    ) + "".join(f'[jobs.read{i}]\ncommand = "sleep 0.6"\n' for i in range(4))
    path = write_catalog(
        'policy = "fifo"\n[pools]\nprimary_writes = 2\n'
        + worker_table("primary", server.defaults_file("govern_admin"), 2)
        + worker_table("replica", replica.defaults_file("govern_admin"), 2)
        + jobs
    )
    done = night(path, state_path)
    assert done["status"] == "ok"
    spans = {j["name"]: (a["start_s"], a["finish_s"]) for j in done["jobs"] for a in j["attempts"]}
    writes = [span for name, span in spans.items() if name.startswith("write")]
    assert _max_overlap(writes) == 2
    assert _max_overlap(list(spans.values())) >= 3
    assert {j["worker"] for j in done["jobs"] if j["name"].startswith("write")} == {
        "primary",
        "replica",
    }


class _Receiver(http.server.BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, str], bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.received.append((self.path, dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    """A local HTTP server: (its URL, what was POSTed to it)."""
    received: list[tuple[str, dict[str, str], bytes]] = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/hook/s3cr3t-token", received
    httpd.shutdown()
    httpd.server_close()


def _events(received: list[tuple[str, dict[str, str], bytes]]) -> list[dict[str, Any]]:
    return [json.loads(body) for _, _, body in received]


@pytest.mark.server
def test_deadline_miss_and_failure_reach_a_command_and_a_webhook(
    server: MariaDB,
    state_path: Path,
    tmp_path: Path,
    write_catalog: WriteCatalog,
    webhook: tuple[str, list[tuple[str, dict[str, str], bytes]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, received = webhook
    monkeypatch.setenv("MYSQL_PWD", "never-in-a-hook")
    monkeypatch.setenv("GOVERN_SECRET_THING", "never-in-a-hook")
    path = write_catalog(
        'deadline = "1s"\n'
        + worker_table("main", server.defaults_file("govern_admin"), 2)
        + '[jobs.slow]\ncommand = "sleep 2.5"\ndeadline = "1500ms"\n'
        + '[jobs.quick]\ncommand = "true"\ndeadline = "1s"\n'
        + '[jobs.broken]\ncommand = "echo table gone >&2; exit 3"\n'
        + "[hooks]\ntimeout = '10s'\n"
        + "[hooks.on_deadline_miss]\n"
        + "command = 'cat > miss-$GOVERN_EVENT_SCOPE.json; env > miss-env.txt'\n"
        + f'webhook = "{url}"\n'
        + "[hooks.on_failure]\n"
        + f'webhook = "{url}"\n'
    )
    done = night(path, state_path)
    assert done["status"] == "failed"
    summary = done["summary"]
    misses = {m["job"]: m for m in summary["deadline_misses"]}
    assert set(misses) == {"slow", None}  # quick ended before its deadline, broken failed
    assert misses["slow"]["state"] == "running"
    assert misses["slow"]["outcome"] == "ok"
    assert misses["slow"]["detected_s"] == pytest.approx(1.5, abs=0.4)
    assert misses["slow"]["finish_s"] > misses["slow"]["detected_s"]
    assert summary["deadline"] is not None

    events = _events(received)
    assert sorted((e["event"], e["scope"], e["job"]) for e in events) == [
        ("deadline_miss", "job", "slow"),
        ("deadline_miss", "night", None),
        ("failure", "job", "broken"),
        ("failure", "night", None),
    ]
    for event in events:
        assert problems(event) == [], event
        assert event["night_id"] == done["id"]
    failure = next(e for e in events if e["event"] == "failure" and e["scope"] == "job")
    assert failure["status"] == "failed" and "exit 3: table gone" in failure["reason"]
    assert failure["worker"] == "main"
    night_failure = next(e for e in events if e["event"] == "failure" and e["scope"] == "night")
    assert night_failure["outcomes"] == {"ok": 2, "failed": 1}
    assert all(h["Content-Type"] == "application/json" for _, h, _ in received)

    on_stdin = json.loads((tmp_path / "miss-job.json").read_text())
    assert on_stdin["job"] == "slow" and problems(on_stdin) == []
    env = (tmp_path / "miss-env.txt").read_text()
    assert "never-in-a-hook" not in env
    assert "GOVERN_EVENT=deadline_miss" in env and "GOVERN_SCHEDULE=summaries" in env

    recorded = summary["events"]
    assert len(recorded) == 4
    deliveries = [d for e in recorded for d in e["deliveries"]]
    assert all(d["ok"] for d in deliveries), deliveries
    assert {d["hook"] for d in deliveries} == {"command", "webhook"}
    assert all("s3cr3t" not in d["target"] for d in deliveries)  # the webhook's path is its token
    assert problems(done) == []


@pytest.mark.server
def test_plan_warns_of_a_predicted_miss(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        "[estimate]\nrows_per_second = 100\n"
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.big]\ncommand = "true"\nrows = 1000\ndeadline = "5s"\n'
        + '[jobs.small]\ncommand = "true"\nrows = 10\ndeadline = "5s"\n'
    )
    done = govern("schedule", "plan", str(path), "--state", str(state_path), "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    warnings = plan["warnings"]
    assert plan["deadline_at"] is None
    due = {j["name"]: j["deadline_at"] for j in plan["jobs"]}
    assert due["big"] is not None and due["big"] == due["small"]
    assert problems(plan) == []
    late = [w for w in warnings if "deadline" in w]
    assert len(late) == 1 and late[0].startswith("job big is predicted to finish at ")
    assert "after its deadline" in late[0]


@pytest.fixture
def flag(server: MariaDB, connect: Any) -> Iterator[str]:
    """A fresh one-row table on the primary the ETL would set: ``app.ready_XXXX (done)``."""
    table = f"app.ready_{uuid.uuid4().hex[:8]}"
    conn = connect("govern_admin")
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (done INT)")
        cur.execute(f"INSERT INTO {table} VALUES (0)")
    yield table
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {table}")


def _ready_catalog(
    write_catalog: WriteCatalog, server: MariaDB, query: str, timeout: str, extra: str = ""
) -> Path:
    return write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.stamp]\ncommand = "echo ran >> ran.txt"\n'
        + f'[ready_when]\nquery = "{query}"\ntimeout = "{timeout}"\ninterval = "200ms"\n'
        + extra
    )


@pytest.mark.server
def test_ready_when_waits_for_the_etl(
    server: MariaDB,
    connect: Any,
    flag: str,
    state_path: Path,
    tmp_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    path = _ready_catalog(write_catalog, server, f"SELECT done FROM {flag}", "30s")
    conn = connect("govern_admin")

    def etl_finishes() -> None:
        with conn.cursor() as cur:
            cur.execute(f"UPDATE {flag} SET done = 1")

    timer = threading.Timer(1.0, etl_finishes)
    timer.start()
    try:
        done = night(path, state_path)
    finally:
        timer.cancel()
    assert done["status"] == "ok"
    ready = done["summary"]["ready"]
    assert ready["ready"] is True and ready["polls"] >= 3 and ready["waited_s"] >= 0.8
    assert (tmp_path / "ran.txt").read_text() == "ran\n"


@pytest.mark.server
def test_ready_when_timeout_fails_the_night_and_fires_on_failure(
    server: MariaDB,
    flag: str,
    state_path: Path,
    tmp_path: Path,
    write_catalog: WriteCatalog,
    webhook: tuple[str, list[tuple[str, dict[str, str], bytes]]],
) -> None:
    url, received = webhook
    path = _ready_catalog(
        write_catalog,
        server,
        f"SELECT done FROM {flag}",
        "1s",
        f'[hooks.on_failure]\nwebhook = "{url}"\n',
    )
    done = govern("schedule", "run", str(path), "--state", str(state_path), "--json")
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["status"] == "failed" and document["jobs"] == []
    assert document["note"].startswith("not ready: [ready_when] still false after ")
    assert document["note"].endswith("last poll returned 0")
    assert not (tmp_path / "ran.txt").exists()
    [event] = _events(received)
    assert (event["event"], event["scope"], event["status"]) == ("failure", "night", "failed")
    assert event["night_id"] == document["id"] and event["reason"] == document["note"]
    # a night with no job is not a night to replay
    replay = govern("schedule", "simulate", str(path), "--state", str(state_path), "--json")
    assert replay.returncode == 0 and json.loads(replay.stdout)["durations"] == "estimated"


@pytest.mark.server
def test_a_ready_when_query_that_cannot_work_fails_at_once(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = _ready_catalog(write_catalog, server, "SELECT 1 FROM", "1h")
    done = govern("schedule", "run", str(path), "--state", str(state_path))
    assert done.returncode == 2, done.stderr
    assert f"{path}:" in done.stderr
    assert "ready_when query: You have an error in your SQL syntax" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_ready_when_query_must_only_read(write_catalog: WriteCatalog) -> None:
    path = write_catalog(
        '[workers.w]\nhost = "127.0.0.1"\n[jobs.a]\ncommand = "true"\n'
        '[ready_when]\nquery = "CREATE TABLE app.t (a INT)"\n'
    )
    with pytest.raises(ConfigError) as raised:
        load_catalog(path)
    assert raised.value.message.startswith(
        f"{path}:6: the ready_when query must be one SELECT, WITH or SHOW statement"
    )


@pytest.mark.server
def test_mail_goes_through_the_local_sendmail(
    server: MariaDB,
    state_path: Path,
    tmp_path: Path,
    write_catalog: WriteCatalog,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "sendmail"
    fake.write_text(
        f'#!/bin/sh\necho "$@" > {tmp_path}/sendmail-args\ncat > "$(mktemp {tmp_path}/XXXXXX.eml)"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.broken]\ncommand = "exit 1"\n'
        + '[hooks.on_failure]\nmail = ["dba@example.com", "oncall@example.com"]\n'
    )
    done = night(path, state_path)
    assert done["status"] == "failed"
    assert (tmp_path / "sendmail-args").read_text().split() == ["-t", "-oi"]
    mails = [path.read_text() for path in tmp_path.glob("*.eml")]
    assert len(mails) == 2  # the job's failure, then the night's
    [mail] = [m for m in mails if "failure of job broken" in m]
    assert "To: dba@example.com, oncall@example.com" in mail
    assert f"Subject: [govern] summaries: failure of job broken (night {done['id']})" in mail
    body = email.message_from_string(mail, policy=email.policy.default).get_content()
    event = json.loads(body[body.index("{") :])
    assert event["job"] == "broken" and problems(event) == []
    deliveries = [d for e in done["summary"]["events"] for d in e["deliveries"]]
    assert all(d["hook"] == "mail" and d["ok"] for d in deliveries)


@pytest.mark.server
def test_a_failing_hook_is_recorded_not_fatal(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.broken]\ncommand = "exit 1"\n'
        + "[hooks]\ntimeout = '1s'\n"
        + '[hooks.on_failure]\ncommand = "echo pager down; exit 4"\n'
        + 'webhook = "http://127.0.0.1:9/closed"\n'
    )
    done = night(path, state_path)
    assert done["status"] == "failed"
    deliveries = {
        d["hook"]: d
        for e in done["summary"]["events"]
        if e["scope"] == "job"
        for d in e["deliveries"]
    }
    assert deliveries["command"]["ok"] is False
    assert deliveries["command"]["detail"] == "exit 4: pager down"
    assert deliveries["webhook"]["ok"] is False
    assert deliveries["webhook"]["detail"].startswith("cannot POST")


@pytest.mark.server
def test_a_missed_fire_reaches_on_missed_fire(
    server: MariaDB,
    clock: Clock,  # noqa: F811 - the serve tests' fixture
    state_path: Path,
    services: list[Any],  # noqa: F811 - the serve tests' fixture
    write_catalog: WriteCatalog,
    webhook: tuple[str, list[tuple[str, dict[str, str], bytes]]],
) -> None:
    url, received = webhook
    path = write_catalog(
        'name = "nightly"\n[schedule]\n'
        + DAILY
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.stamp]\ncommand = "true"\n'
        + f'[hooks.on_missed_fire]\nwebhook = "{url}"\n'
    )
    clock.set(2026, 3, 1, 0, 30)
    serve(path, state_path, services).shutdown()
    clock.set(2026, 3, 1, 3, 0)  # two hours late, grace one hour: APScheduler's EVENT_JOB_MISSED
    serve(path, state_path, services)
    wait_until(lambda: len(received) == 1)
    [event] = _events(received)
    assert (event["event"], event["scope"], event["status"]) == ("missed_fire", "night", "missed")
    assert event["scheduled_for"] == "2026-03-01T01:00:00+00:00"
    assert event["night_id"] is None and "beyond misfire_grace 3600s" in event["reason"]
    assert problems(event) == []


@pytest.mark.server
def test_serve_tells_on_failure_when_the_catalog_was_edited_into_an_error(
    server: MariaDB,
    clock: Clock,  # noqa: F811 - the serve tests' fixture
    state_path: Path,
    services: list[Any],  # noqa: F811 - the serve tests' fixture
    write_catalog: WriteCatalog,
    webhook: tuple[str, list[tuple[str, dict[str, str], bytes]]],
) -> None:
    url, received = webhook
    path = write_catalog(
        'name = "nightly"\n[schedule]\n'
        + DAILY
        + worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.stamp]\ncommand = "true"\n'
        + f'[hooks.on_failure]\nwebhook = "{url}"\n'
    )
    clock.set(2026, 3, 1, 0, 59)
    service = serve(path, state_path, services)
    path.write_text(path.read_text() + "[jobs.stamp.oops]\n")  # a typo made after serve started
    clock.set(2026, 3, 1, 1, 0, 5)
    service.scheduler.wakeup()
    wait_until(lambda: len(received) == 1)
    [event] = _events(received)
    assert (event["event"], event["status"]) == ("failure", "error")
    assert event["reason"].startswith("the catalog cannot be read: ")
    assert event["scheduled_for"] == "2026-03-01T01:00:00+00:00"


# --- with the other night-* items: refusals and resumed nights -------------------------------------


@pytest.mark.server
def test_a_refused_night_fires_on_failure_with_its_reason(
    server: MariaDB,
    flag: str,
    connect: Any,
    state_path: Path,
    write_catalog: WriteCatalog,
    webhook: tuple[str, list[tuple[str, dict[str, str], bytes]]],
) -> None:
    """A night refused before any job (here the key-count floor: 4 keys after two nights of
    10) is a failed night: on_failure gets the refusal, and the summary records the delivery."""
    url, received = webhook
    table = flag.replace("ready_", "keys_")
    conn = connect("govern_admin")
    with conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (k VARCHAR(32) PRIMARY KEY, n BIGINT)")
        cur.executemany(f"INSERT INTO {table} VALUES (%s, 10)", [f"k{i}" for i in range(10)])
    try:
        path = write_catalog(
            f'[sizing]\nquery = "SELECT k, n FROM {table}"\n'
            + worker_table("main", server.defaults_file("govern_admin"), concurrency=4)
            + '[each.build]\ncommand = "true"\n'
            + f'[hooks.on_failure]\nwebhook = "{url}"\n'
        )
        for _ in range(2):
            assert night(path, state_path)["status"] == "ok"
        assert received == []
        with conn.cursor() as cur:
            cur.execute(f"DELETE FROM {table} WHERE k NOT IN ('k0', 'k1', 'k2', 'k3')")
        refused = night(path, state_path)
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS {table}")
    assert refused["status"] == "failed" and refused["summary"]["refused"] is True
    [event] = _events(received)
    assert (event["event"], event["scope"], event["status"]) == ("failure", "night", "failed")
    assert event["night_id"] == refused["id"]
    assert event["reason"] == f"night {refused['id']}: the night was refused: {refused['note']}"
    assert event["outcomes"] == {"skipped": 4}
    [recorded] = refused["summary"]["events"]
    assert recorded["deliveries"][0]["ok"] is True


@pytest.mark.server
def test_a_resume_that_is_not_ready_leaves_the_night_to_resume(
    server: MariaDB,
    flag: str,
    connect: Any,
    state_path: Path,
    tmp_path: Path,
    write_catalog: WriteCatalog,
) -> None:
    """``--resume`` waits for [ready_when] too; still false at its timeout, it records no new
    night (which would hide the interrupted one from the next --resume): the interrupted night
    keeps its status, its note says why, exit 1; once ready, --resume goes on with it."""
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.first]\ncommand = "sleep 2"\n'
        + '[jobs.second]\ncommand = "echo ran >> ran.txt"\ndepends_on = ["first"]\n'
        + f'[ready_when]\nquery = "SELECT done FROM {flag}"\ntimeout = "1s"\ninterval = "200ms"\n'
    )
    conn = connect("govern_admin")
    with conn.cursor() as cur:
        cur.execute(f"UPDATE {flag} SET done = 1")
    stop = StopRequest()
    timer = threading.Timer(0.8, stop.request, (0,))
    timer.start()
    try:
        first = night(path, state_path, stop=stop)
    finally:
        timer.cancel()
    assert first["status"] == "interrupted"
    with conn.cursor() as cur:
        cur.execute(f"UPDATE {flag} SET done = 0")
    args = ("schedule", "run", str(path), "--state", str(state_path), "--resume", "--json")
    waited = govern(*args)
    assert waited.returncode == 1, waited.stderr
    document = json.loads(waited.stdout)
    assert document["id"] == first["id"] and document["status"] == "interrupted"
    assert document["note"].startswith("not ready: [ready_when] still false after ")
    assert not (tmp_path / "ran.txt").exists()
    with conn.cursor() as cur:
        cur.execute(f"UPDATE {flag} SET done = 1")
    resumed = govern(*args)
    assert resumed.returncode == 0, resumed.stderr
    document = json.loads(resumed.stdout)
    assert document["id"] == first["id"] and document["status"] == "ok"
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
