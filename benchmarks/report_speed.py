"""How big and how fast the HTML reports are, for digests of many classes.

Builds synthetic digests (deterministic; heavy-tailed class times, a 30-day
timeline of one bucket per busy minute) of 100, 10,000 and 100,000 classes,
renders the digest report with the default --top 20, and opens each page in
headless Chromium (Debian's, through Playwright) to time the load and the first
full-page screenshot. Prints a table: classes, HTML size, render time, browser
load time, screenshot time, and whether the page was clean (no console errors,
no requests).

    .venv/bin/python benchmarks/report_speed.py [--classes 100,10000,100000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from govern.digest.report import Flag, Report, ReportClass, SampleQuery, Stat  # noqa: E402
from govern.digest.timeline import Timeline  # noqa: E402
from govern.reports.digest_html import digest_report  # noqa: E402


def synthetic(classes: int) -> Report:
    found = []
    for i in range(classes):
        total = 5e5 / (i + 1) ** 1.1
        count = max(1, int(20000 / (i + 1) ** 0.7))
        found.append(
            ReportClass(
                id=f"{(i * 2654435761) % 2**128:032X}",
                fingerprint=f"select c.id, c.name, o.total from customers_{i % 97} c join orders o "
                f"on o.customer_id = c.id where c.region = ? and o.created_at > ? limit ?",
                count=count,
                metrics={
                    "Query_time": Stat(
                        total,
                        1e-4,
                        total / count * 9,
                        total / count,
                        total / count * 0.8,
                        total / count * 3,
                        total / count * 5,
                    ),
                    "Lock_time": Stat(0.1, 0, 0.01, 1e-4, 1e-4, 2e-4, 3e-4),
                    "Rows_examined": Stat(count * 500.0, 1, 5000, 500, 400, 2000, 4000),
                    "Rows_sent": Stat(count * 10.0, 0, 100, 10, 10, 50, 90),
                },
                flags={"Full_scan": Flag(count // 3, count)},
                histogram=[
                    ("1µs", 0),
                    ("10µs", 0),
                    ("100µs", 1),
                    ("1ms", count // 2),
                    ("10ms", count // 3),
                    ("100ms", count // 10),
                    ("1s", 1),
                    ("10s+", 0),
                ],
                sample=SampleQuery(
                    "SELECT c.id, c.name, o.total FROM customers c JOIN orders o "
                    "ON o.customer_id = c.id WHERE c.region = 'EU' LIMIT 10"
                ),
                values={"user": {"app": count}},
                first_seen="2024-03-01T00:00:00",
                last_seen="2024-03-31T00:00:00",
            )
        )
    base = 1_709_251_200  # 2024-03-01 UTC
    timeline = Timeline.from_events((base + minute * 60, 0.5) for minute in range(30 * 24 * 60))
    return Report(
        "synthetic.json",
        "govern",
        sum(c.count for c in found),
        found,
        sum(c.total_time for c in found),
        first_seen="2024-03-01T00:00:00",
        last_seen="2024-03-31T00:00:00",
        timeline=timeline,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--classes", default="100,10000,100000")
    args = parser.parse_args()
    from browser import launch

    launcher = launch()
    browser = next(launcher)
    print(f"{'classes':>8} {'html':>9} {'render':>8} {'load':>7} {'screenshot':>10}  clean")
    with tempfile.TemporaryDirectory() as folder:
        for classes in (int(n) for n in args.classes.split(",")):
            digest = synthetic(classes)
            started = time.perf_counter()
            html = digest_report(digest)
            render = time.perf_counter() - started
            path = Path(folder) / f"digest-{classes}.html"
            path.write_text(html, encoding="utf-8")
            started = time.perf_counter()
            opened = browser.open(path, screenshot=Path(folder) / f"digest-{classes}.png")
            total = time.perf_counter() - started
            size = path.stat().st_size
            print(
                f"{classes:>8} {size / 1e6:>7.2f}MB {render:>7.2f}s {opened.load_seconds:>6.2f}s "
                f"{total - opened.load_seconds:>9.2f}s  {opened.clean}"
            )
    for _ in launcher:
        pass


if __name__ == "__main__":
    main()
