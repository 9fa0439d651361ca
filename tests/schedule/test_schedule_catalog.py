"""The catalog: every mistake is one line naming file:line, exit 2, before anything runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from govern.connection import ConnectionSettings
from govern.errors import ConfigError
from govern.schedulers.catalog import find_cycle, load_catalog
from tests.schedule.support import WriteCatalog

GOOD = """
    name = "nightly"
    policy = "two-ended"

    [defaults]
    timeout = "30m"
    retries = 1

    [sizing]
    query = "SELECT type, approx_rows FROM nightly.row_counts"

    [schedule]
    cron = "30 1 * * *"
    timezone = "Europe/Paris"
    misfire_grace = "2h"

    [lag_guard]
    max_lag = "30s"

    [workers.r1]
    host = "db-r1"
    concurrency = 2

    [workers.r2]
    host = "db-r2"
    end = "long"

    [jobs.clicks]
    command = "./job.sh click"

    [jobs.views]
    command = ["./job.sh", "view"]
    key = "page_view"
    depends_on = ["clicks"]
    weight = 3
    timeout = "1h30m"
    workers = ["r2"]

    [jobs.totals]
    sql = "totals.sql"
    rows = 10
    retries = 0
"""


@pytest.fixture
def good(tmp_path: Path, write_catalog: WriteCatalog) -> Path:
    (tmp_path / "totals.sql").write_text("SELECT 1;\n")
    _script(tmp_path)
    return write_catalog(GOOD)


def test_a_good_catalog_loads_with_defaults_applied(good: Path) -> None:
    catalog = load_catalog(good)
    assert catalog.name == "nightly" and catalog.policy == "two-ended"
    assert [w.name for w in catalog.workers] == ["r1", "r2"]
    assert catalog.worker("r1").concurrency == 2 and catalog.worker("r2").end == "long"
    clicks, views, totals = catalog.jobs
    assert clicks.command == ("/bin/sh", "-c", "./job.sh click") and clicks.key == "clicks"
    assert clicks.timeout == 1800 and clicks.retries == 1
    assert views.command == ("./job.sh", "view") and views.key == "page_view"
    assert views.depends_on == ("clicks",) and views.workers == ("r2",) and views.weight == 3
    assert views.timeout == 5400
    assert totals.sql == good.parent / "totals.sql" and totals.rows == 10 and totals.retries == 0
    assert [j.order for j in catalog.jobs] == [0, 1, 2]
    assert catalog.schedule is not None and catalog.schedule.misfire_grace == 7200
    assert catalog.schedule.coalesce is True
    assert catalog.lag_guard is not None and catalog.lag_guard.max_lag == 30
    assert catalog.lag_guard.heartbeat_table == "percona.heartbeat"


def _script(folder: Path) -> None:
    """The job.sh the catalogs name (a list command's program must exist)."""
    if not (folder / "job.sh").exists():
        (folder / "job.sh").write_text("#!/bin/sh\n")
        (folder / "job.sh").chmod(0o755)


def _error(write_catalog: WriteCatalog, body: str, script: bool = True) -> str:
    path = write_catalog(body)
    (path.parent / "totals.sql").write_text("SELECT 1;\n")
    if script:
        _script(path.parent)
    with pytest.raises(ConfigError) as raised:
        load_catalog(path)
    message = raised.value.message
    assert "\n" not in message
    return message.replace(str(path), "CATALOG")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ('depends_on = ["clicks"]', 'depends_on = ["clickz"]'),
            "CATALOG:33: job views: unknown dependency 'clickz' (did you mean 'clicks'?)",
        ),
        (('workers = ["r2"]', 'workers = ["r3"]'), "CATALOG:36: job views: unknown worker 'r3'"),
        (
            ("retries = 0", "retires = 0"),
            "CATALOG:41: unknown key 'retires' in [jobs.totals] (did you mean 'retries'?)",
        ),
        (
            ('timeout = "1h30m"', 'timeout = "soon"'),
            "CATALOG:35: timeout: expected a duration like 90, 90s, 15m, 1h30m or 500ms, got 'soon'",
        ),
        (
            ('policy = "two-ended"', 'policy = "random"'),
            "CATALOG:2: policy must be one of fifo, sjf, ljf, wspt, two-ended; got 'random'",
        ),
        (
            ('sql = "totals.sql"', 'sql = "missing.sql"'),
            "CATALOG:39: sql file missing.sql: no such file",
        ),
        (
            ('host = "db-r2"', 'host = "db-r2"\npassword = "hunter2"'),
            "CATALOG:25: a password does not belong in the catalog: use defaults_file (a 0600 option file)",
        ),
        (
            ('cron = "30 1 * * *"', 'cron = "61 1 * * *"'),
            "CATALOG:12: schedule: Error validating expression '61': the last value (61) is higher than the maximum value (59)",
        ),
        (
            ('timezone = "Europe/Paris"', 'timezone = "Mars/Olympus"'),
            "CATALOG:13: unknown timezone 'Mars/Olympus'",
        ),
        (
            ("concurrency = 2", "concurrency = 0"),
            "CATALOG:21: concurrency must be an integer >= 1, got 0",
        ),
        (
            ('command = "./job.sh click"', 'command = "./job.sh click"\nsql = "totals.sql"'),
            "CATALOG:27: a job needs exactly one of sql = FILE or command = ...",
        ),
        (("rows = 10", 'rows = 10\nkey = "t"'), "CATALOG:40: size a job one way: key or rows"),
    ],
)
def test_mistakes_name_the_line(
    change: tuple[str, str], expected: str, write_catalog: WriteCatalog
) -> None:
    old, new = change
    assert old in GOOD
    assert _error(write_catalog, GOOD.replace(old, new, 1)) == expected


def test_a_cycle_is_shown_whole(write_catalog: WriteCatalog) -> None:
    body = (
        GOOD
        + """
    [jobs.a]
    command = "true"
    depends_on = ["c"]

    [jobs.b]
    command = "true"
    depends_on = ["a"]

    [jobs.c]
    command = "true"
    depends_on = ["b"]
    """
    )
    assert _error(write_catalog, body) == "CATALOG:45: dependency cycle: a -> c -> b -> a"


def test_toml_syntax_error_has_its_line(write_catalog: WriteCatalog) -> None:
    message = _error(write_catalog, GOOD.replace("[jobs.totals]", "[jobs.totals"))
    assert message.startswith("CATALOG:38: ")


def test_no_workers_or_jobs(write_catalog: WriteCatalog) -> None:
    assert _error(write_catalog, "[jobs.a]\ncommand = 'true'\n") == (
        "CATALOG:1: the catalog needs at least one [workers.NAME] table"
    )
    assert _error(write_catalog, "[workers.a]\n") == (
        "CATALOG:1: the catalog needs at least one [jobs.NAME] or [each.NAME] table"
    )


def test_wrap_is_read_from_defaults_and_jobs(tmp_path: Path, write_catalog: WriteCatalog) -> None:
    body = GOOD.replace("retries = 1\n", "retries = 1\nwrap = true\n").replace(
        'command = "./job.sh click"', 'command = "./job.sh click"\nwrap = false'
    )
    body = body.replace('key = "page_view"', 'key = "page_view"\nwrap_mode = "session"')
    (tmp_path / "totals.sql").write_text("SELECT 1;\n")
    _script(tmp_path)
    catalog = load_catalog(write_catalog(body))
    assert [(j.name, j.wrap, j.wrap_mode) for j in catalog.jobs] == [
        ("clicks", False, "auto"),
        ("views", True, "session"),
        ("totals", True, "auto"),
    ]
    assert _error(write_catalog, body.replace('wrap_mode = "session"', 'wrap_mode = "loud"')) == (
        "CATALOG:35: wrap_mode must be one of auto, global, threshold, session; got 'loud'"
    )
    assert _error(write_catalog, body.replace("wrap = false", 'wrap = "no"')) == (
        "CATALOG:30: wrap must be true or false, got 'no'"
    )


def test_find_cycle() -> None:
    assert find_cycle({"a": ("b",), "b": ()}) is None
    assert find_cycle({"a": ("b",), "b": ("a",)}) == ["a", "b", "a"]
    deep = {f"j{i}": (f"j{i + 1}",) for i in range(5000)}
    deep["j5000"] = ()
    assert find_cycle(deep) is None  # iterative: no recursion limit


def test_cli_bad_catalog_is_one_line_exit_2(tmp_path: Path, write_catalog: WriteCatalog) -> None:
    _script(tmp_path)
    path = write_catalog(GOOD.replace("retries = 0", "retires = 0"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "govern",
            "schedule",
            "plan",
            str(path),
            "--state",
            str(tmp_path / "s.db"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"govern: error: {path}:41: unknown key 'retires' in [jobs.totals] (did you mean 'retries'?)"
    ]


TEMPLATED = """
    [sizing]
    query = "SELECT type, n FROM counts"

    [workers.r1]
    host = "db-r1"

    [jobs.prepare]
    command = "true"

    [jobs.purchase]
    sql = "purchase.sql"

    [each.summary]
    command = ["./job.sh", "{key}"]
    depends_on = ["prepare"]
    timeout = "10m"

    [jobs.report]
    command = "true"
    depends_on = ["summary", "purchase"]
"""


def test_templates_make_one_job_per_unclaimed_key(
    tmp_path: Path, write_catalog: WriteCatalog
) -> None:
    _script(tmp_path)
    (tmp_path / "purchase.sql").write_text("SELECT 1;\n")
    catalog = load_catalog(write_catalog(TEMPLATED))
    assert [j.name for j in catalog.jobs] == ["prepare", "purchase", "report"]
    expanded, unusable = catalog.expand(["click", "purchase", "page_view", "bad key", "click"])
    names = [j.name for j in expanded.jobs]
    assert names == ["prepare", "purchase", "summary.click", "summary.page_view", "report"]
    assert [j.order for j in expanded.jobs] == [0, 1, 2, 3, 4]
    click = expanded.job("summary.click")
    assert click.command == ("./job.sh", "click") and click.key == "click"
    assert click.template == "summary" and click.timeout == 600 and click.depends_on == ("prepare",)
    assert expanded.job("report").depends_on == ("summary.click", "summary.page_view", "purchase")
    assert unusable == ["'bad key' (not a safe job name)"]
    assert expanded.templates == ()


def test_template_sql_per_key_must_exist(tmp_path: Path, write_catalog: WriteCatalog) -> None:
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "click.sql").write_text("SELECT 1;\n")
    body = (
        TEMPLATED.replace('[jobs.purchase]\n    sql = "purchase.sql"\n', "")
        .replace(', "purchase"', "")
        .replace('command = ["./job.sh", "{key}"]', 'sql = "sql/{key}.sql"')
    )
    catalog = load_catalog(write_catalog(body))
    expanded, unusable = catalog.expand(["click", "view"])
    assert [j.name for j in expanded.jobs] == ["prepare", "summary.click", "report"]
    assert expanded.job("summary.click").sql == tmp_path / "sql" / "click.sql"
    assert unusable == [f"summary.view ({tmp_path}/sql/view.sql does not exist)"]


def test_template_errors(tmp_path: Path, write_catalog: WriteCatalog) -> None:
    (tmp_path / "purchase.sql").write_text("SELECT 1;\n")
    clash = TEMPLATED + "\n    [each.prepare]\n    command = 'true'\n"
    assert _error(write_catalog, clash) == "CATALOG:22: prepare is both a job and a template"
    sized = TEMPLATED.replace('timeout = "10m"', 'timeout = "10m"\n    rows = 5')
    assert _error(write_catalog, sized) == "CATALOG:17: unknown key 'rows' in [each.summary]"
    loop = TEMPLATED.replace('depends_on = ["prepare"]', 'depends_on = ["report"]')
    assert (
        _error(write_catalog, loop) == "CATALOG:20: dependency cycle: report -> summary -> report"
    )


def test_a_command_script_must_exist_and_be_executable(
    tmp_path: Path, write_catalog: WriteCatalog
) -> None:
    assert _error(write_catalog, GOOD, script=False) == "CATALOG:31: command ./job.sh: no such file"
    (tmp_path / "job.sh").write_text("#!/bin/sh\n")
    assert _error(write_catalog, GOOD) == "CATALOG:31: command ./job.sh: not executable (chmod +x)"
    (tmp_path / "job.sh").chmod(0o755)
    load_catalog(tmp_path / "summaries.toml")


def test_old_job_logs_are_pruned(tmp_path: Path) -> None:
    from govern.schedulers.night import prune_logs

    for night in (1, 2, 10, 11):
        (tmp_path / str(night)).mkdir()
        (tmp_path / str(night) / "job.1.log").write_text("x")
    (tmp_path / "notes").mkdir()
    prune_logs(tmp_path, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["10", "11", "notes"]


def test_opts_out_needs_wrap_and_reaches_govern_run(
    tmp_path: Path, write_catalog: WriteCatalog
) -> None:
    from govern.schedulers.launch import ServerHandle, job_argv

    body = GOOD.replace('command = "./job.sh click"', 'command = "./job.sh click"\nopts_out = true')
    assert _error(write_catalog, body) == (
        "CATALOG:29: job clicks: opts_out = true says how the job runs under `govern run`:"
        " it needs wrap = true"
    )
    body = body.replace("opts_out = true", "opts_out = true\nwrap = true")
    (tmp_path / "totals.sql").write_text("SELECT 1;\n")
    _script(tmp_path)
    job = load_catalog(write_catalog(body)).job("clicks")
    handle = ServerHandle(ConnectionSettings(), tmp_path / "w.cnf")
    argv = job_argv(job, handle, "mariadb")
    assert argv[argv.index("--") - 3 : argv.index("--") + 1] == [
        "--opts-out", "--defaults-file", str(tmp_path / "w.cnf"), "--",
    ]  # fmt: skip
