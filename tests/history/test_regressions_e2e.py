"""The README's two cron lines, end to end on the test MariaDB: `govern collect --once --store`
after each stretch of simulated hours, `govern regressions` the next morning.

The workload really runs on the server; its sessions set ``timestamp``, which MariaDB also
stamps the slow log's ``# Time:`` lines with (measured on 10.11), so seven days of hours are
logged in seconds. A class made slower on purpose (its index dropped: a full scan of 200,000
rows) must be the only one reported, with its host and the hour it changed; the same days
without the slowdown report nothing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.collect.support import prepare, workload
from tests.harness import MariaDB
from tests.paths import REPO

pytestmark = pytest.mark.server

#: The README's placeholders and what they are here.
LOG = "/var/log/mysql/slow.log"
STORE = "/var/lib/govern/history.db"
REPLICA = "/etc/govern/replica.cnf"
ROUNDS = 25  # per simulated hour: each class runs this often
TARGET = "SELECT SUM(amount) FROM regress_orders WHERE customer = %s"


def cron_lines() -> list[str]:
    """The commands of the README's crontab block (the five time fields dropped)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```crontab\n(.*?)```", text, re.S)
    assert block, "README.md has no crontab block"
    lines = [line for line in block[1].splitlines() if line.strip()]
    assert len(lines) == 2, lines
    return [line.split(None, 5)[5] for line in lines]


def run(command: str, places: dict[str, str], state: Path) -> subprocess.CompletedProcess[str]:
    """A cron line as cron runs it (govern's state in ``state``)."""
    for placeholder, here in places.items():
        command = command.replace(placeholder, here)
    words = shlex.split(command)
    assert words[0] == "govern", words
    return subprocess.run(
        [sys.executable, "-m", "govern", *words[1:]],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
        env={**os.environ, "XDG_STATE_HOME": str(state)},
    )


@pytest.fixture
def private_slow_log(server: MariaDB, tmp_path: Path) -> Iterator[Path]:
    """The server's slow log written to a file of this test's (restored afterwards; the
    ``server`` fixture restores long_query_time and slow_query_log)."""
    log = tmp_path / "slow.log"
    conn: Any = server.connect("root")
    with conn.cursor() as cur:
        cur.execute("SELECT @@slow_query_log_file")
        ((previous,),) = cur.fetchall()
        cur.execute("SET GLOBAL slow_query_log_file = %s", (str(log),))
        # only the workload's sessions log (they lower it for themselves): a statement at
        # the real time would put the simulated hours behind the collector's floor
        cur.execute("SET GLOBAL long_query_time = 3600")
        cur.execute("SET GLOBAL slow_query_log = 1")
    try:
        yield log
    finally:
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL slow_query_log_file = %s", (previous,))
        conn.close()


def prepare_orders(conn: Any) -> None:
    """200,000 orders of 1,000 customers, found by an index (unbinlogged)."""
    with conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        cur.execute("DROP TABLE IF EXISTS regress_orders")
        cur.execute(
            "CREATE TABLE regress_orders (id INT PRIMARY KEY, customer INT, amount INT,"
            " KEY k_customer (customer))"
        )
        cur.execute(
            "INSERT INTO regress_orders SELECT seq, seq % 1000, seq % 97 FROM seq_1_to_200000"
        )


def simulated_hour(server: MariaDB, at: datetime) -> None:
    """The workload of one hour, logged as if it ran at ``at`` (server's clock)."""
    conn: Any = server.connect("root", database="app")
    try:
        with conn.cursor() as cur:
            cur.execute("SET timestamp = %s", (int(at.timestamp()),))
            cur.execute("SET SESSION long_query_time = 0")
        workload(conn, rounds=ROUNDS)
        with conn.cursor() as cur:
            for customer in range(ROUNDS):
                cur.execute(TARGET, (customer * 37,))
                cur.fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("slowdown", [True, False], ids=["slowdown", "steady"])
def test_the_readme_cron_lines_report_the_class_made_slower_and_nothing_else(
    server: MariaDB, private_slow_log: Path, tmp_path: Path, slowdown: bool
) -> None:
    collect, regressions = cron_lines()
    assert "--once" in collect and "--store" in collect and "--store" in regressions
    places = {
        LOG: str(private_slow_log),
        STORE: str(tmp_path / "history.db"),
        REPLICA: str(server.defaults_file("govern_admin")),
    }
    setup: Any = server.connect("root", database="app")
    prepare(setup)
    prepare_orders(setup)

    # Hours by the server's clock: the window is the 24 hours before this hour began
    # (govern regressions' default --until); its last hour closes 5 minutes after its end.
    hour = datetime.now().replace(minute=0, second=0, microsecond=0)
    baseline = [hour - timedelta(days=day, hours=back) for day in range(2, 8) for back in (9, 8, 7)]
    window = [hour - timedelta(hours=back) for back in (7, 6, 5, 4, 3, 2)]
    changed = window[3]

    def collect_now() -> None:
        # as cron would, minutes later: the log has been quiet for collect's --settle (2 s),
        # so the last event is read into its own hour, not held back into the next bucket
        time.sleep(3)
        done = run(collect, places, tmp_path / "state")
        assert done.returncode == 0, done.stderr

    for at in sorted(baseline):
        simulated_hour(server, at)
    collect_now()
    for at in window[:3]:
        simulated_hour(server, at)
    collect_now()
    if slowdown:
        with setup.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute("ALTER TABLE regress_orders DROP KEY k_customer")
    for at in window[3:]:
        simulated_hour(server, at)
    collect_now()
    setup.close()

    done = run(regressions, places, tmp_path / "state")
    report = run(regressions + " --format json", places, tmp_path / "state")
    assert done.returncode == report.returncode, (done.stderr, report.stderr)
    if not slowdown:
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(report.stdout)["regressions"] == []
        return
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads(report.stdout)
    assert document["hosts"] == [socket.gethostname()]
    assert document["baseline"]["hours"] == len(baseline)
    assert document["window"]["hours"] == len(window)
    (found,) = document["regressions"]
    assert found["fingerprint"] == "select sum(amount) from regress_orders where customer = ?"
    assert found["host"] == socket.gethostname()
    assert found["changed_at"] == changed.strftime("%Y-%m-%d %H:%M:%S")
    assert {"p95", "total_time", "plan"} <= set(found["kinds"]), found["reasons"]
    assert (
        "plan: full scan of regress_orders appeared (was ref on key k_customer)"
        in (found["reasons"])
    )
    # the text names the host, the class and the hour
    assert f"{socket.gethostname()}  {found['id'][-16:]}" in done.stdout
    assert f"since {changed:%Y-%m-%d %H:%M}" in done.stdout
