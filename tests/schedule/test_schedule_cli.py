"""The schedule commands as a user runs them: JSON contracts (docs/json.md), text output,
exit codes, simulate on a recorded night, and jobs wrapped with `govern run`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from govern.schedulers.catalog import load_catalog
from govern.schedulers.launch import ServerHandle, job_argv
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, govern, govern_process, worker_table

pytestmark = pytest.mark.server


@pytest.fixture
def catalog(server: MariaDB, write_catalog: WriteCatalog) -> Path:
    return write_catalog(
        'name = "contract"\npolicy = "sjf"\n'
        + worker_table("main", server.defaults_file("govern_admin"), concurrency=2)
        + """
[jobs.a]
command = "sleep 0.3"
rows = 3000
[jobs.b]
command = "sleep 0.1"
rows = 1000
[jobs.c]
command = "sleep 0.2"
rows = 2000
depends_on = ["b"]
weight = 2
[jobs.d]
command = "exit 5"
rows = 10
""",
    )


def _types(document: dict[str, Any], spec: dict[str, type | tuple[type, ...]]) -> None:
    for key, kind in spec.items():
        assert key in document, key
        assert isinstance(document[key], kind), (key, document[key])


NUMBER = (int, float)
OPTIONAL_NUMBER = (int, float, type(None))


def test_run_json_is_the_night_document(catalog: Path, state_path: Path) -> None:
    proc = govern("schedule", "run", str(catalog), "--state", str(state_path), "--json")
    assert proc.returncode == 1, proc.stderr  # job d failed
    night = json.loads(proc.stdout)
    _types(
        night,
        {
            "schema": str,
            "schema_version": int,
            "id": int,
            "schedule": str,
            "catalog": str,
            "policy": str,
            "trigger": str,
            "started_at": str,
            "finished_at": str,
            "status": str,
            "host": str,
            "workers": list,
            "summary": dict,
            "jobs": list,
        },
    )
    assert night["schema"] == "govern.schedule.night" and night["schema_version"] == 1
    assert (
        night["status"] == "failed"
        and night["trigger"] == "manual"
        and night["scheduled_for"] is None
    )
    summary = night["summary"]
    _types(
        summary,
        {
            "jobs": int,
            "done": int,
            "makespan_s": NUMBER,
            "mean_completion_s": NUMBER,
            "done_at_half_makespan": NUMBER,
            "done_at": dict,
            "curve": list,
            "outcomes": dict,
            "estimate_error": dict,
            "lag_waits_s": dict,
        },
    )
    assert (
        summary["jobs"] == 4
        and summary["done"] == 3
        and summary["outcomes"] == {"ok": 3, "failed": 1}
    )
    assert summary["curve"][0] == {"time_share": 0.0, "done_share": 0.0}
    assert summary["curve"][-1]["done_share"] == 0.75
    for job in night["jobs"]:
        _types(
            job,
            {
                "name": str,
                "position": int,
                "weight": NUMBER,
                "rows": int,
                "estimate_s": NUMBER,
                "estimate_method": str,
                "planned": dict,
                "worker": str,
                "lane": str,
                "start_s": NUMBER,
                "finish_s": NUMBER,
                "actual_s": NUMBER,
                "outcome": str,
                "attempts": list,
            },
        )
        attempt = job["attempts"][0]
        _types(
            attempt,
            {
                "number": int,
                "worker": str,
                "lane": str,
                "started_at": str,
                "start_s": NUMBER,
                "outcome": str,
            },
        )
    by_name = {j["name"]: j for j in night["jobs"]}
    assert by_name["d"]["exit_code"] == 5 and by_name["d"]["reason"] == "exit 5"
    assert by_name["c"]["start_s"] >= by_name["b"]["finish_s"]


def test_history_plan_and_simulate_json(catalog: Path, state_path: Path) -> None:
    assert govern("schedule", "run", str(catalog), "--state", str(state_path)).returncode == 1
    history = json.loads(govern("schedule", "history", "--state", str(state_path), "--json").stdout)
    assert history["schema"] == "govern.schedule.history" and history["schema_version"] == 1
    assert [n["schedule"] for n in history["nights"]] == ["contract"]
    one = json.loads(
        govern(
            "schedule", "history", "--night", "last", "--state", str(state_path), "--json"
        ).stdout
    )
    assert one["nights"][0]["id"] == history["nights"][0]["id"]

    plan = json.loads(
        govern("schedule", "plan", str(catalog), "--state", str(state_path), "--json").stdout
    )
    assert plan["schema"] == "govern.schedule.plan" and plan["schema_version"] == 1
    _types(
        plan,
        {
            "policy": str,
            "base_time": str,
            "workers": list,
            "lanes": list,
            "sizes": dict,
            "jobs": list,
            "skipped": list,
            "summary": dict,
            "warnings": list,
        },
    )
    # d and b start at once; a takes the lane d frees while c still waits for b
    assert [j["name"] for j in plan["jobs"]] == ["d", "b", "a", "c"]
    methods = {j["name"]: j["estimate_method"] for j in plan["jobs"]}
    # d never succeeded: estimated from the other jobs' latest runs, by a line through
    # them, or by their median rate when timing noise on a busy machine tilts the line
    # below zero at d's 10 rows
    assert methods.pop("d") in ("global-fit", "global-rate")
    assert methods == {"a": "rate", "b": "rate", "c": "rate"}
    for job in plan["jobs"]:
        _types(
            job,
            {
                "worker": str,
                "lane": str,
                "predicted_start_s": NUMBER,
                "predicted_finish_s": NUMBER,
                "predicted_start_at": str,
                "estimate_s": OPTIONAL_NUMBER,
            },
        )

    simulated = json.loads(
        govern("schedule", "simulate", str(catalog), "--state", str(state_path), "--json").stdout
    )
    assert simulated["schema"] == "govern.schedule.simulate" and simulated["schema_version"] == 1
    assert (
        simulated["durations"] == "recorded" and simulated["night_id"] == history["nights"][0]["id"]
    )
    assert [p["policy"] for p in simulated["policies"]] == [
        "fifo",
        "sjf",
        "ljf",
        "wspt",
        "two-ended",
    ]
    assert simulated["jobs"] == 4 and simulated["lanes"] == 2
    for row in simulated["policies"]:
        assert row["makespan_s"] >= simulated["makespan_lower_bound_s"] - 1e-6
        assert row["curve"][-1]["done_share"] == 1.0
    assert simulated["recorded"]["policy"] == "sjf"
    estimated = json.loads(
        govern(
            "schedule",
            "simulate",
            str(catalog),
            "--estimated",
            "--state",
            str(state_path),
            "--json",
        ).stdout
    )
    assert estimated["durations"] == "estimated" and estimated["night_id"] is None
    assert estimated["recorded"] is None and estimated["jobs"] == 4
    missing = govern(
        "schedule", "simulate", str(catalog), "--night", "999", "--state", str(state_path)
    )
    assert missing.returncode == 2 and "--night 999: no such night of 'contract'" in missing.stderr
    assert (
        json.loads(
            govern(
                "schedule", "history", "other-schedule", "--state", str(state_path), "--json"
            ).stdout
        )["nights"]
        == []
    )
    one_worker = json.loads(
        govern(
            "schedule",
            "simulate",
            str(catalog),
            "--workers",
            "1",
            "--policies",
            "sjf,fifo",
            "--state",
            str(state_path),
            "--json",
        ).stdout
    )
    assert one_worker["lanes"] == 1
    sjf, fifo = one_worker["policies"]
    assert sjf["mean_completion_s"] <= fifo["mean_completion_s"]


def test_text_outputs(catalog: Path, state_path: Path) -> None:
    plan = govern("schedule", "plan", str(catalog), "--state", str(state_path))
    assert plan.returncode == 0
    assert "plan for contract" in plan.stdout and "predicted: makespan" in plan.stdout
    assert "done by % of the night" in plan.stdout
    run = govern("schedule", "run", str(catalog), "--state", str(state_path))
    assert "4 jobs: 1 failed, 3 ok" in run.stdout and "done at 50% of the makespan" in run.stdout
    assert "failed: d: exit 5" in run.stdout
    assert run.stderr.count("job d failed on main: exit 5") == 1
    listing = govern("schedule", "history", str(catalog), "--state", str(state_path))
    assert "contract" in listing.stdout and "failed" in listing.stdout
    night = govern("schedule", "history", "--night", "last", "--state", str(state_path))
    assert "estimate" in night.stdout and "outcome" in night.stdout
    simulated = govern("schedule", "simulate", str(catalog), "--state", str(state_path))
    assert "two-ended" in simulated.stdout and "recorded durations" in simulated.stdout
    assert (
        govern("schedule", "history", "--night", "999", "--state", str(state_path)).returncode == 2
    )
    assert (
        govern(
            "schedule", "simulate", str(catalog), "--policies", "magic", "--state", str(state_path)
        ).returncode
        == 2
    )


def test_wrapped_job_command_line(
    server: MariaDB, tmp_path: Path, write_catalog: WriteCatalog
) -> None:
    """What `wrap = true` runs: `govern run --name JOB [--mode M] --defaults-file CNF -- CMD`."""
    (tmp_path / "q.sql").write_text("SELECT 1;\n")
    (tmp_path / "job.sh").write_text("#!/bin/sh\n")
    (tmp_path / "job.sh").chmod(0o755)
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.plain]\ncommand = ["./job.sh", "click"]\n[jobs.q]\nsql = "q.sql"\ntimeout = "1m"\n',
    )
    import dataclasses

    catalog = load_catalog(path)
    cnf = tmp_path / "w.cnf"
    handle = ServerHandle(
        settings=catalog.worker("main").settings(),
        defaults_file=cnf,
        read_only=True,
        statement_time_variable="max_statement_time",
    )
    plain = dataclasses.replace(catalog.job("plain"), wrap=True, wrap_mode="session")
    assert job_argv(plain, handle, "/usr/bin/mariadb") == [
        sys.executable,
        "-m",
        "govern",
        "run",
        "--name",
        "plain",
        "--mode",
        "session",
        "--defaults-file",
        str(cnf),
        "--",
        "./job.sh",
        "click",
    ]
    sql = dataclasses.replace(catalog.job("q"), wrap=True)
    assert job_argv(sql, handle, "/usr/bin/mariadb", kill_grace=10) == [
        sys.executable,
        "-m",
        "govern",
        "run",
        "--name",
        "q",
        "--defaults-file",
        str(cnf),
        "--",
        "/usr/bin/mariadb",
        f"--defaults-file={cnf}",
        "--batch",
        "--init-command=SET SESSION TRANSACTION READ ONLY; SET SESSION max_statement_time = 70",
    ]
    assert job_argv(
        dataclasses.replace(sql, wrap=False),
        dataclasses.replace(handle, read_only=False),
        "/usr/bin/mariadb",
    )[-1] == ("--init-command=SET SESSION max_statement_time = 61")


def test_a_wrapped_job_runs_under_govern_run(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.ok]\ncommand = "true"\nwrap = true\n[jobs.bad]\ncommand = "exit 3"\nwrap = true\n',
    )
    proc = govern("schedule", "run", str(path), "--state", str(state_path), "--json")
    night = json.loads(proc.stdout)
    jobs = {j["name"]: j for j in night["jobs"]}
    assert jobs["ok"]["outcome"] == "ok"
    assert (
        jobs["bad"]["outcome"] == "failed" and jobs["bad"]["exit_code"] == 3
    )  # the job's own code


def test_progress_bar_on_a_terminal_lines_when_piped(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        'name = "bar"\n'
        + worker_table("main", server.defaults_file("govern_admin"))
        + "".join(f'[jobs.j{i}]\ncommand = "sleep 0.3"\n' for i in range(4)),
    )
    command = f"{sys.executable} -m govern schedule run {path} --state {state_path}"
    tty = subprocess.run(
        ["script", "-qec", command, "/dev/null"], capture_output=True, text=True, check=False
    )
    assert tty.returncode == 0, tty.stdout
    assert "bar night 1" in tty.stdout and "/4" in tty.stdout  # rich draws on the pty
    assert "started on" not in tty.stdout
    piped = govern("schedule", "run", str(path), "--state", str(state_path))
    assert piped.returncode == 0, piped.stderr
    lines = piped.stderr.splitlines()
    for i in range(4):  # one line when a job starts, one when it ends: cron can follow a night
        assert sum(f"govern: job j{i} started on main" in line for line in lines) == 1
        assert sum(f"govern: job j{i} ok on main in " in line for line in lines) == 1


def test_piped_lines_come_while_the_night_runs(
    server: MariaDB, tmp_path: Path, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.wait]\ncommand = "while [ ! -e go ]; do sleep 0.05; done"\n',
    )
    proc = govern_process("schedule", "run", str(path), "--state", str(state_path), cwd=tmp_path)
    assert proc.stderr is not None
    warnings = []
    first = proc.stderr.readline()
    while first.startswith("govern: warning:"):  # the plan's (no history yet)
        warnings.append(first)
        first = proc.stderr.readline()
    (tmp_path / "go").touch()  # the job was still waiting for its file
    _, rest = proc.communicate(timeout=30)
    assert proc.returncode == 0, rest
    assert first.startswith("govern: job wait started on main")
    assert warnings == [
        "govern: warning: 1 job has no estimate (no size, no history): it goes to the long"
        " side and is predicted at 60s\n"
    ]
    assert "govern: job wait ok on main in " in rest


def test_a_missing_program_fails_its_job_with_a_clear_reason(
    server: MariaDB, state_path: Path, write_catalog: WriteCatalog
) -> None:
    path = write_catalog(
        worker_table("main", server.defaults_file("govern_admin"))
        + '[jobs.ghost]\ncommand = ["no-such-program-govern"]\n[jobs.fine]\ncommand = "true"\n',
    )
    night = json.loads(
        govern("schedule", "run", str(path), "--state", str(state_path), "--json").stdout
    )
    jobs = {j["name"]: j for j in night["jobs"]}
    assert jobs["ghost"]["outcome"] == "failed"
    assert jobs["ghost"]["reason"] == "no-such-program-govern: command not found or not executable"
    assert jobs["fine"]["outcome"] == "ok"
