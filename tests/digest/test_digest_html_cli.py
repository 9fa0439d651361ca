"""``govern digest --format html`` end to end: a recorded log, a real ``govern run`` window.

The slow log of the test MariaDB records a workload, a ``govern run --mode global``
in its middle (the log is off while it runs), and more workload; the page must
shade that run's blind window on both load charts, read from the state store.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.browser import png_size
from tests.paths import REPO


def govern(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "govern", *args], capture_output=True, text=True)


def queries(connect: Any, n: int, pause: float = 0.0) -> None:
    conn = connect("govern_app", tcp=True, database="app")
    with conn.cursor() as cur:
        for i in range(n):
            cur.execute("SELECT %s + 1", (i,))
        if pause:
            cur.execute("SELECT SLEEP(%s)", (pause,))
    conn.close()


def same_minute_for(seconds: float) -> None:
    """Wait until the next ``seconds`` fit in the current wall-clock minute.

    Toggling the slow log makes MariaDB write a banner, and the banner swallows the
    next event's ``# Time:`` line (pt-query-digest's parser, which govern keeps: see
    docs/design/digest-engines.md), so the events after the run keep the time from before it. If
    the run crossed a minute, the per-minute timeline would end before the window.
    """
    left = 60 - time.time() % 60
    if left < seconds:
        time.sleep(left + 0.1)


def test_html_page_with_the_blind_window_of_a_real_run(
    server: Any,
    connect: Any,
    tmp_path: Path,
    state_path: Path,
    browser: Any,
    recording: Callable[[str], AbstractContextManager[Path]],
) -> None:
    same_minute_for(15)
    with recording("html-run") as log:
        queries(connect, 50, pause=0.05)
        run = govern(
            "run",
            "--defaults-file",
            str(server.defaults_file("govern_admin")),
            "--state",
            str(state_path),
            "--mode",
            "global",
            "--name",
            "nightly-load",
            "--",
            "sleep",
            "1.5",
        )
        assert run.returncode == 0, run.stderr
        time.sleep(0.2)
        queries(connect, 50)
    page = tmp_path / "report.html"
    result = govern(
        "digest", str(log), "--format", "html", "-o", str(page), "--state", str(state_path)
    )
    assert result.returncode == 0, result.stderr
    html = page.read_text()
    assert html.count('data-window="blind: nightly-load"') == 2  # on both load charts
    assert "govern run global mode" in html and "select sleep(?)" in html
    opened = browser.open(page, screenshot=tmp_path / "report.png")
    assert opened.clean, (opened.console_errors, opened.page_errors, opened.requests)
    assert opened.charts == {"timeseries": 2, "bars": 1, "histogram": 1}
    assert png_size(tmp_path / "report.png")[0] == 1280
    # Without the state file (another host), no window; the same run saved as history shades it.
    bare = tmp_path / "bare.html"
    assert (
        govern(
            "digest",
            str(log),
            "--format",
            "html",
            "-o",
            str(bare),
            "--state",
            str(tmp_path / "none.db"),
        ).returncode
        == 0
    )
    assert "data-window" not in bare.read_text() and not (tmp_path / "none.db").exists()
    history = tmp_path / "history.json"
    history.write_text(govern("history", "--json", "--state", str(state_path)).stdout)
    saved = tmp_path / "saved.html"
    args = (
        "--format",
        "html",
        "-o",
        str(saved),
        "--state",
        str(tmp_path / "none.db"),
        "--windows",
        str(history),
    )
    assert govern("digest", str(log), *args).returncode == 0
    assert saved.read_text().count('data-window="blind: nightly-load"') == 2


def workload(pause: float) -> Any:
    def run(conn: Any) -> None:
        with conn.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS dh")
            cur.execute("CREATE TABLE dh (id INT PRIMARY KEY, v INT)")
            for i in range(80):
                cur.execute("INSERT INTO dh VALUES (%s, %s)", (i, i))
            for _ in range(4):
                cur.execute("SELECT SLEEP(%s), COUNT(*) FROM dh", (pause,))

    return run


def test_compare_two_govern_digests(tmp_path: Path, record_log: Callable[..., Path]) -> None:
    saved = []
    for name, pause in (("cmp-before", 0.005), ("cmp-after", 0.05)):
        log = record_log(name, workload(pause))
        out = govern("digest", str(log), "--format", "json")
        assert out.returncode == 0, out.stderr
        path = tmp_path / f"{name}.json"
        path.write_text(out.stdout)
        saved.append(str(path))
    strict = ("--threshold", "200%", "--min-time", "50ms")
    compared = govern("digest", "compare", *saved, "--format", "json", *strict)
    assert compared.returncode == 1, compared.stderr
    document = json.loads(compared.stdout)
    status = {c["fingerprint"]: c["status"] for c in document["classes"]}
    # Only the sleep is made slower on purpose; the setup statements' times are the machine's
    # (under load eighty inserts can take three times longer on one run than on the other).
    assert status["select sleep(?), count(*) from dh"] == "slower"
    assert document["before"]["producer"] == document["after"]["producer"] == "govern"
    assert "govern digest compare" in govern("digest", "--help").stdout


def test_output_options_belong_to_html(tmp_path: Path) -> None:
    log = REPO / "examples" / "mariadb-slow.log"
    wrong = govern("digest", str(log), "-o", str(tmp_path / "x.txt"))
    assert wrong.returncode == 2 and "-o: only with --format html" in wrong.stderr
    assert not (tmp_path / "x.txt").exists()
    page = tmp_path / "example.html"
    assert govern("digest", str(log), "--format", "html", "-o", str(page)).returncode == 0
    assert page.read_text().count('data-chart="timeseries"') == 2


def _busy_history(path: Path) -> None:
    """A server where many runs happened (500 windows on db1 in two hours) and a few on
    another server: ``govern history --json`` as the digest reads it."""
    windows = []
    for n in range(500):
        start = 1795507200 + 14 * n  # 2026-11-24 08:00:00 UTC, a window every 14 s
        windows.append(
            {"server": "db1:3306", "name": f"load-{n}", "start": start, "end": start + 5}
        )
    for n in range(3):
        start = 1795507500 + 600 * n
        windows.append(
            {"server": "db2:3306", "name": f"other-{n}", "start": start, "end": start + 60}
        )
    day_before = {"server": "db1:3306", "name": "a-day-before", "start": 1795420800}
    windows.append({**day_before, "end": 1795420900})
    iso = [
        {
            **w, "run_id": w["name"], "mode": "threshold", "variable": "long_query_time",
            "value": 10, "original_value": 1,
            "start": datetime.fromtimestamp(w["start"], UTC).isoformat(),
            "end": datetime.fromtimestamp(w["end"], UTC).isoformat(),
        }
        for w in windows
    ]  # fmt: skip
    path.write_text(
        json.dumps(
            {"schema": "govern.run.history", "schema_version": 1, "runs": [], "windows": iso}
        )
    )


def test_many_windows_are_grouped_filtered_and_listed_after_the_classes(
    tmp_path: Path, browser: Any
) -> None:
    log = tmp_path / "db1.log"
    minutes = [
        f"# Time: 261124  8:{m:02d}:00\n# User@Host: app[app] @ localhost []\n"
        "# Query_time: 0.010000  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 1\n"
        f"SELECT c FROM t WHERE id = {m};\n"
        for m in range(60)
    ] + [
        f"# Time: 261124  9:{m:02d}:00\n# User@Host: app[app] @ localhost []\n"
        "# Query_time: 0.010000  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 1\n"
        f"SELECT c FROM t WHERE id = {m};\n"
        for m in range(60)
    ]
    log.write_text("".join(minutes))
    history = tmp_path / "history.json"
    _busy_history(history)
    page = tmp_path / "page.html"
    done = govern(
        "digest", str(log), "--host", "db1", "--format", "html", "-o", str(page),
        "--state", str(tmp_path / "none.db"), "--windows", str(history),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert "other-0" not in html and "db2" not in html  # another server's runs
    assert "a-day-before" not in html  # nor runs outside the log's time span
    shaded = re.findall(r'data-window="([^"]*)"', html)
    assert 2 <= len(shaded) <= 20, len(shaded)  # grouped: no longer 500 per chart
    assert "blind: 500 runs" in shaded
    assert html.index('id="classes"') < html.index('id="windows"')  # the table comes last
    opened = browser.open(page, screenshot=tmp_path / "page.png")
    assert opened.clean, (opened.console_errors, opened.page_errors)
