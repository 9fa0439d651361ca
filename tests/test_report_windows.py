"""Blind windows recorded by a real ``govern run`` are shaded on the digest's load chart."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from browser import png_size
from slowlogs import events, pt_digest, recording

from govern.reports.digest_html import digest_report
from govern.reports.digest_input import load_digest
from govern.reports.timeline import Timeline
from govern.reports.windows import windows_from_state
from govern.state import StateStore


def queries(connect: Any, n: int) -> None:
    conn = connect("govern_app", tcp=True, database="app")
    with conn.cursor() as cur:
        for i in range(n):
            cur.execute("SELECT %s + 1", (i,))
    conn.close()


def test_a_global_run_is_a_shaded_window(
    server: Any, connect: Any, tmp_path: Path, state_path: Path, browser: Any
) -> None:
    with recording(server, "windows") as log:
        queries(connect, 50)
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "govern",
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
            ],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 0, run.stderr
        time.sleep(0.2)
        queries(connect, 50)
    with StateStore.open(state_path) as store:
        windows = windows_from_state(store)
    assert [w.label for w in windows] == ["blind: nightly-load"]
    (window,) = windows
    assert window.end is not None and 1.0 < window.end - window.start < 10
    assert "global mode" in window.detail and "= 0" in window.detail
    digest = load_digest(str(pt_digest(log, tmp_path / "digest.json")))
    digest.timeline = Timeline.from_events(events(log))
    html = digest_report(digest, windows=windows)
    assert html.count('data-window="blind: nightly-load"') == 2  # on both load charts
    page = tmp_path / "windows.html"
    page.write_text(html)
    opened = browser.open(page, screenshot=tmp_path / "windows.png")
    assert opened.clean, (opened.console_errors, opened.page_errors, opened.requests)
    assert opened.charts["timeseries"] == 2
    assert png_size(tmp_path / "windows.png")[0] == 1280
