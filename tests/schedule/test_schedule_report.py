"""The night report: Gantt per replica, the done curve with policies, estimate vs actual."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from govern.reports.schedule import schedule_report
from tests.browser import png_size
from tests.paths import DATA

NS = "{http://www.w3.org/2000/svg}"


def recorded() -> tuple[dict[str, Any], dict[str, Any]]:
    night = json.loads((DATA / "schedule-night.json").read_text())
    simulation = json.loads((DATA / "schedule-simulate.json").read_text())
    return night, simulation


def charts(html: str, kind: str) -> list[ET.Element]:
    found = []
    for chunk in html.split("<svg")[1:]:
        element = ET.fromstring("<svg" + chunk.split("</svg>")[0] + "</svg>")
        if element.get("data-chart") == kind:
            found.append(element)
    return found


def test_one_gantt_per_worker_with_every_attempt_on_its_lane() -> None:
    night, simulation = recorded()
    html = schedule_report(night, simulation, generated_at=datetime(2024, 1, 1, tzinfo=UTC))
    gantts = charts(html, "gantt")
    assert [g.get("aria-label") for g in gantts] == ["Jobs on main", "Jobs on socket"]
    drawn = {
        g.findtext(f"{NS}title", "").split(" (")[0]: g.get("data-outcome")
        for chart in gantts
        for g in chart.findall(f"{NS}g[@class='job']")
    }
    ran = {j["name"]: j["attempts"][-1]["outcome"] for j in night["jobs"] if j["attempts"]}
    assert drawn == ran and drawn["e"] == "failed"
    assert "f" not in drawn  # skipped: never started, so no bar
    # Both charts share one time scale: the night's makespan.
    assert all(g.find(f"{NS}g[@class='marker']") is not None for g in gantts)


def test_curve_overlays_the_night_the_plan_and_every_simulated_policy() -> None:
    night, simulation = recorded()
    html = schedule_report(night, simulation)
    (curve,) = charts(html, "curves")
    names = [g.get("data-series") for g in curve.findall(f"{NS}g[@class='series']")]
    policies = [p["policy"] for p in simulation["policies"]]
    assert names == [
        "this night (sjf)",
        "plan (predicted)",
        *(f"{p} (simulated)" for p in policies),
    ]
    for policy in simulation["policies"]:
        assert f"<td>{policy['policy']}</td>" in html


def test_estimates_flag_jobs_far_from_their_estimate() -> None:
    night, _ = recorded()
    night["jobs"][0]["actual_s"] = night["jobs"][0]["estimate_s"] * 3  # 200% over
    html = schedule_report(night)
    (pairs,) = charts(html, "pairs")
    flagged = [
        g
        for g in pairs.findall(f"{NS}g[@class='pair']")
        if g.find(f"{NS}rect[@fill='#d55e00']") is not None
    ]
    assert [g.findtext(f"{NS}title", "").split(":")[0] for g in flagged][:1] == [
        night["jobs"][0]["name"]
    ]
    error = night["jobs"][0]["actual_s"] - night["jobs"][0]["estimate_s"]
    assert f"{error:+.3f} s" in html  # in seconds: a ratio has no bound for tiny estimates
    assert len(charts(html, "curves")) == 1  # without a simulation: the night and the plan only


def test_report_opens_clean_in_chromium(browser: Any, tmp_path: Path) -> None:
    night, simulation = recorded()
    report = tmp_path / "night.html"
    report.write_text(schedule_report(night, simulation))
    opened = browser.open(report, screenshot=tmp_path / "night.png")
    assert opened.clean, (opened.console_errors, opened.page_errors, opened.requests)
    assert opened.charts == {"gantt": 2, "curves": 1, "pairs": 1}
    assert png_size(tmp_path / "night.png")[1] > 900


def test_a_night_still_running_has_no_summary_yet() -> None:
    night, _ = recorded()
    night["summary"], night["finished_at"], night["status"] = None, None, "running"
    last = night["jobs"][0]
    last["outcome"] = last["attempts"][-1]["outcome"] = "running"
    last["attempts"][-1]["finish_s"] = None
    html = schedule_report(night)
    assert "still running" in html and 'data-outcome="running"' in html
    assert len(charts(html, "gantt")) == 2 and len(charts(html, "curves")) == 1
