"""The digest HTML report, from a slow log recorded on the test MariaDB, in real Chromium."""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from govern.digest.load import load_report
from govern.digest.report import Report, ReportClass, SampleQuery, Stat
from govern.digest.timeline import Timeline
from govern.reports.digest_html import digest_report
from govern.reports.windows import load_windows, windows_from_history
from tests.browser import png_size
from tests.digest.slowlogs import events, pt_digest

NS = "{http://www.w3.org/2000/svg}"


def workload(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS rep")
        cur.execute("CREATE TABLE rep (id INT PRIMARY KEY, note VARCHAR(64))")
        for i in range(120):
            cur.execute("INSERT INTO rep VALUES (%s, %s)", (i, f"row {i}"))
        for i in range(60):
            cur.execute("SELECT * FROM rep WHERE id = %s", (i,))
        for _ in range(5):
            cur.execute("SELECT SLEEP(0.02), COUNT(*) FROM rep WHERE note LIKE %s", ("row%",))
        # Text from the log must never become markup in the report.
        cur.execute("SELECT '<script>alert(1)</script>' AS x, SLEEP(0.05)")


@pytest.fixture
def recorded(record_log: Callable[..., Path], tmp_path: Path) -> tuple[Report, Path]:
    log = record_log("report", workload)
    digest = load_report(str(pt_digest(log, tmp_path / "digest.json")))
    digest.timeline = Timeline.from_events(events(log))
    return digest, log


def history(start: float, end: float | None) -> dict[str, Any]:
    """A ``govern.run.history`` document (docs/json.md) with one blind window."""

    def iso(epoch: float) -> str:
        return datetime.fromtimestamp(epoch, UTC).isoformat()

    return {
        "schema": "govern.run.history",
        "schema_version": 1,
        "runs": [],
        "windows": [
            {
                "run_id": "r1",
                "name": "nightly-load",
                "server": "db1:3306",
                "mode": "global",
                "variable": "log_slow_query",
                "value": 0,
                "original_value": 1,
                "start": iso(start),
                "end": iso(end) if end is not None else None,
            }
        ],
    }


def svgs(html: str) -> list[ET.Element]:
    return [
        ET.fromstring("<svg" + chunk.split("</svg>")[0] + "</svg>")
        for chunk in html.split("<svg")[1:]
    ]


def test_report_of_a_recorded_log(
    recorded: tuple[Report, Path], tmp_path: Path, browser: Any
) -> None:
    digest, _ = recorded
    first = min(digest.timeline.counts) if digest.timeline else 0
    # The window covers the log's first minute: its events may fall anywhere in that minute,
    # and the page shows only windows that overlap the log's time span.
    windows = windows_from_history(history(first, first + 60))
    html = digest_report(digest, windows=windows, top=3)
    kinds = [s.get("data-chart") for s in svgs(html)]
    assert kinds.count("timeseries") == 2 and kinds.count("bars") == 1
    assert kinds.count("histogram") == 3  # one per detailed class
    # The heaviest class first, linked from its bar.
    ranked = sorted(digest.classes, key=lambda c: -c.total_time)
    top_id = ranked[0].id
    assert f'href="#class-{top_id}"' in html and f'id="class-{top_id}"' in html
    assert html.count('class="class"') == 3  # detailed sections: the top 3 only
    assert f"Other classes ({len(digest.classes) - 3})" in html
    # Every window shaded and labelled on both load charts.
    assert html.count('data-window="blind: nightly-load"') == 2
    assert "govern run global mode on db1:3306: log_slow_query = 0" in html
    # Query text escaped: the sample is text, never a script. Its class ranks by the
    # server's timings (a loaded server's DDL or 120 INSERTs can outweigh its 50 ms and
    # push it out of the top 3): the page that details every class shows its sample.
    assert "<script>" not in html
    every = digest_report(digest, windows=windows, top=len(digest.classes))
    assert "<script>" not in every and "&lt;script&gt;alert(1)&lt;/script&gt;" in every
    report = tmp_path / "report.html"
    report.write_text(html)
    opened = browser.open(report, screenshot=tmp_path / "report.png")
    assert opened.clean, (opened.console_errors, opened.page_errors, opened.requests)
    # Only the first class is open; closed sections' histograms are not laid out.
    assert opened.charts == {"timeseries": 2, "bars": 1, "histogram": 1}
    assert png_size(tmp_path / "report.png")[0] == 1280


def test_blind_windows_come_from_saved_history(tmp_path: Path) -> None:
    path = tmp_path / "history.json"
    import json

    path.write_text(json.dumps(history(1_700_000_000, None)))
    (window,) = load_windows([str(path)])
    assert (
        window.start == 1_700_000_000
        and window.end is None
        and window.label == "blind: nightly-load"
    )
    other = tmp_path / "other.json"
    other.write_text('{"schema": "govern.lint"}')
    with pytest.raises(Exception, match="not a govern history document"):
        load_windows([str(other)])


def synthetic(classes: int) -> Report:
    found = [
        ReportClass(
            id=f"{i:032X}",
            fingerprint=f"select * from t{i} where a = ? and b in (?+)",
            count=1000 - i % 1000,
            metrics={
                "Query_time": Stat(
                    sum=1e6 / (i + 1), min=0.001, max=2.0, avg=0.01, median=0.008, p95=0.05, p99=0.2
                ),
                "Rows_examined": Stat(sum=1000, min=1, max=100, avg=10, median=8, p95=50),
            },
            histogram=[("1ms", 3), ("10ms", 10), ("100ms", 1)],
            sample=SampleQuery(f"SELECT * FROM t{i} WHERE a = 1 AND b IN (1,2,3)"),
        )
        for i in range(classes)
    ]
    base = 1_700_000_000
    timeline = Timeline.from_events((base + s * 13, 0.01) for s in range(20_000))
    return Report(
        "big.json", "govern", 10**7, found, sum(c.total_time for c in found), timeline=timeline
    )


def test_a_large_digest_stays_small_and_fast() -> None:
    digest = synthetic(20_000)
    started = time.perf_counter()
    html = digest_report(digest, top=20)
    elapsed = time.perf_counter() - started
    assert html.count('class="class"') == 20
    assert len(re.findall(r"<details class=\"page-of-rows\">", html)) == 100  # 10,000 listed rows
    assert "9,980 smaller classes are not listed here" in html
    assert len(html) < 6_000_000, len(html)
    assert elapsed < 10, elapsed  # about 1 s on the 2-core machine; generous under load


def test_an_empty_digest_still_makes_a_page() -> None:
    html = digest_report(Report("empty.json", "govern", 0, [], 0.0))
    assert "no timeline" in html and "nothing to show" in html and "Other classes" not in html


def test_throttle_holds_are_shaded_beside_the_blind_windows() -> None:
    """Holds of a saved history (``holds[]``): overlapping ones make one shaded stretch, in
    the holds' own colour, with their reasons in the tooltip."""

    def iso(epoch: float) -> str:
        return datetime.fromtimestamp(epoch, UTC).isoformat()

    base = 1_700_000_000
    document = history(base + 600, base + 900)
    document["holds"] = [
        {
            "work": "govern load a.csv",
            "check": "lag",
            "reason": "replica lag 9.0 s on db2:3306 > 2 s",
            "started_at": iso(base + 3000),
            "ended_at": iso(base + 3600),
        },
        {
            "work": "govern load a.csv",
            "check": "load",
            "reason": "Threads_running 40 > 25 on db1",
            "started_at": iso(base + 3300),
            "ended_at": iso(base + 4200),
        },
        {
            "work": "lag guard",
            "check": "lag",
            "reason": "replica lag unknown on r1",
            "started_at": iso(base + 9000),
            "ended_at": None,
        },
    ]
    windows = windows_from_history(document)
    assert [w.label for w in windows] == ["blind: nightly-load", "held: lag, load", "held: lag"]
    merged = windows[1]
    assert (merged.start, merged.end) == (base + 3000, base + 4200)
    assert "govern load a.csv: Threads_running 40 > 25 on db1" in merged.detail
    assert windows[2].end is None
    html = digest_report(synthetic(3), windows=windows, top=3)
    assert html.count('data-window="held: lag, load"') == 2  # both load charts
    hold_shade = [
        rect
        for chart in svgs(html)
        for group in chart.iter(f"{NS}g")
        if group.get("data-window") == "held: lag, load"
        for rect in group.iter(f"{NS}rect")
    ]
    assert hold_shade and all(r.get("fill") == "#009E73" for r in hold_shade)
    assert "in green, stretches when the throttle held batch work back" in html
