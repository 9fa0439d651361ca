"""``govern schedule report``: a night run on the test MariaDB, as a page in Chromium."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from tests.browser import png_size
from tests.harness import MariaDB
from tests.schedule.support import WriteCatalog, govern, last_night, worker_table


def catalog(write_catalog: WriteCatalog, server: MariaDB) -> Path:
    jobs = {"tiny": (0.05, 10), "small": (0.1, 20), "mid": (0.3, 60), "big": (0.6, 120)}
    body = 'name = "report-test"\npolicy = "sjf"\n'
    body += worker_table("main", server.defaults_file("govern_admin"), concurrency=2)
    body += worker_table("socket", server.defaults_file("govern_admin", tcp=False))
    for name, (seconds, rows) in jobs.items():
        body += f'[jobs.{name}]\ncommand = "sleep {seconds}"\nrows = {rows}\n'
    body += '[jobs.broken]\ncommand = "exit 4"\nrows = 5\n'
    body += '[jobs.after_broken]\ncommand = "true"\nrows = 5\ndepends_on = ["broken"]\n'
    return write_catalog(body)


def test_report_of_a_recorded_night(
    server: MariaDB, tmp_path: Path, state_path: Path, browser: Any, write_catalog: WriteCatalog
) -> None:
    path = catalog(write_catalog, server)
    for _ in range(2):  # the second night has estimates learned from the first
        ran = govern("schedule", "run", str(path), "--state", str(state_path))
        assert ran.returncode == 1, ran.stderr  # "broken" fails on purpose
    night = last_night(state_path)
    page = tmp_path / "night.html"
    result = govern("schedule", "report", str(path), "--state", str(state_path), "-o", str(page))
    assert result.returncode == 0, result.stderr
    html = page.read_text()
    assert f"Night {night['id']} of report-test" in html
    kinds = [
        ET.fromstring("<svg" + c.split("</svg>")[0] + "</svg>").get("data-chart")
        for c in html.split("<svg")[1:]
    ]
    assert kinds == ["gantt", "gantt", "curves", "pairs"]
    for policy in ("fifo", "sjf", "ljf", "wspt", "two-ended"):
        assert f'data-series="{policy} (simulated)"' in html
    assert 'data-outcome="failed"' in html and "exit 4" in html
    opened = browser.open(page, screenshot=tmp_path / "night.png")
    assert opened.clean, (opened.console_errors, opened.page_errors, opened.requests)
    assert opened.charts == {"gantt": 2, "curves": 1, "pairs": 1}
    assert png_size(tmp_path / "night.png")[0] == 1280

    # By name (no catalog file): the same night, without the simulated policies.
    named = tmp_path / "named.html"
    result = govern(
        "schedule", "report", "report-test", "--state", str(state_path), "-o", str(named)
    )
    assert result.returncode == 0, result.stderr
    assert "(simulated)" not in named.read_text() and "plan (predicted)" in named.read_text()
    first = tmp_path / "first.html"
    assert (
        govern(
            "schedule",
            "report",
            "--night",
            str(night["id"] - 1),
            "--state",
            str(state_path),
            "-o",
            str(first),
        ).returncode
        == 0
    )
    assert f"Night {night['id'] - 1} of" in first.read_text()


def test_no_night_is_a_one_line_error(tmp_path: Path, state_path: Path) -> None:
    result = govern(
        "schedule", "report", "--state", str(state_path), "-o", str(tmp_path / "x.html")
    )
    assert result.returncode == 2 and result.stderr.startswith(
        "govern: error: the last night: no such night"
    )
    result = govern(
        "schedule",
        "report",
        "--night",
        "abc",
        "--state",
        str(state_path),
        "-o",
        str(tmp_path / "x.html"),
    )
    assert result.returncode == 2 and "--night abc" in result.stderr
    assert not (tmp_path / "x.html").exists()
