"""Trends on the digest page over a history store: the whole server and the top classes per
hour, with govern run jobs and schedule nights from the state file drawn on them."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from govern.history.store import open_store
from govern.history.trends import dense, pick_step, trend
from tests.harness import MariaDB
from tests.history.generated import CHANGED, UNTIL, fill


def govern(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "govern", *args], capture_output=True, text=True)


def test_a_trend_has_every_hour_and_shows_the_slowdown(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    fill(path, slowed={"db2"})
    store = open_store(f"sqlite:{path}")
    try:
        since = UNTIL - timedelta(hours=10)
        report = store.report(since, UNTIL, host="db2")
        slow = next(c for c in report.classes if "orders" in c.fingerprint)
        found = trend(store, since, UNTIL, title="orders", class_id=slow.id, host="db2")
    finally:
        store.close()
    assert found.step == 3600 and len(found.times) == 10  # 20:00 to 05:00, none left out
    assert found.count == [0.0, 0.0] + [30.0] * 8  # the window's hours begin at 22:00
    changed = found.times.index(_epoch(CHANGED))
    assert found.p95[changed - 1] < 0.01 < 0.07 < found.p95[changed]


def _epoch(moment: datetime) -> float:
    return moment.replace(tzinfo=UTC).timestamp()


def test_steps_are_hours_up_to_two_weeks_then_days() -> None:
    start = datetime(2026, 11, 1)
    assert pick_step(start, datetime(2026, 11, 15)) == 3600
    assert pick_step(start, datetime(2026, 11, 16)) == 86400
    assert [p.start.hour for p in dense([], start, start.replace(hour=3), 3600)] == [0, 1, 2]


@pytest.mark.server
def test_the_digest_page_draws_trends_with_runs_and_nights(server: MariaDB, tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    fill(path, slowed={"db2"})
    state = str(tmp_path / "state.db")
    admin = str(server.defaults_file("govern_admin"))
    ran = govern(
        "run", "--name", "summary-build", "--defaults-file", admin, "--state", state, "--", "true"
    )
    assert ran.returncode == 0, ran.stderr
    catalog = tmp_path / "nightly.toml"
    catalog.write_text(
        f'name = "nightly"\n\n[workers.main]\ndefaults_file = "{admin}"\n\n'
        '[jobs.totals]\ncommand = "true"\n',
        encoding="utf-8",
    )
    night = govern("schedule", "run", str(catalog), "--state", state)
    assert night.returncode == 0, night.stderr
    page = tmp_path / "week.html"
    later = f"{datetime.now() + timedelta(hours=2):%Y-%m-%d %H:%M}"  # the run and night: in
    done = govern(
        *("digest", "--store", f"sqlite:{path}", "--since", "2026-11-19", "--until", later),
        *("--format", "html", "-o", str(page), "--state", state),
    )
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert 'id="trends"' in html
    trends = html[html.index('id="trends"') :]
    assert "Whole server" in trends
    assert "1. " in trends and "select sum(amount) from orders where customer = ?" in trends
    for chart in ("Queries per hour", "Query time per hour", "p95 query time", "p99 query time"):
        assert chart in trends
    # both marks, on each of the 4 charts of the whole server and the 2 classes
    assert trends.count('data-window="run: summary-build"') == 12
    assert trends.count('data-window="night: nightly"') == 12
    assert "2 govern run jobs and schedule nights recorded in the state file" in trends
