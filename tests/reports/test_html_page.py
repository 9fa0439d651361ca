"""The report page framework: self-contained, escaped, and clean in a real browser."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from govern import units
from govern.charts import (
    Bar,
    Series,
    Task,
    Window,
    bar_chart,
    curve_chart,
    gantt_chart,
    histogram,
    time_chart,
)
from govern.html import Markup, escape, tag
from govern.html.components import Column, details, figures, paged_table, table
from govern.html.page import CONTENT_SECURITY_POLICY, Page
from tests.browser import png_size


class Collector(HTMLParser):
    """Every start tag with its attributes, and whether the document nests properly."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, name: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((name, dict(attrs)))


def collect(text: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Collector()
    parser.feed(text)
    return parser.tags


def gallery() -> str:
    """A page with one chart of every kind (what the browser test opens)."""
    base = 1_709_287_200.0  # 2024-03-01 10:00 UTC
    times = [base + 60 * i for i in range(120)]
    page = Page("Chart gallery", "every kind of chart govern draws")
    page.add(
        "load",
        "Load",
        time_chart(
            times,
            [float((i * 37) % 23) for i in range(120)],
            label="Queries per second",
            unit=lambda v: units.count(v, "significant"),
            step=60,
            windows=[Window(base + 1800, base + 2700, "blind: load (global)")],
        ),
    )
    page.add(
        "bars",
        "Bars",
        bar_chart(
            [Bar("a", 3), Bar("b <i>", 1)], label="bars", unit=lambda v: units.duration(v, "spaced")
        ),
    )
    page.add(
        "hist",
        "Histogram",
        histogram(
            [("1ms", 3), ("10ms", 9)], label="h", unit=lambda v: units.count(v, "significant")
        ),
    )
    page.add(
        "gantt",
        "Gantt",
        gantt_chart([Task("r1#1", "job", 0, 10), Task("r1#2", "job2", 2, 7, "failed")], label="g"),
    )
    page.add(
        "curves",
        "Curves",
        curve_chart(
            [Series("sjf", [(0, 0), (0.3, 0.9), (1, 1)])], label="c", x_label="x", y_label="y"
        ),
    )
    rows = [[i, f"class {i}", i * 1.5] for i in range(1, 251)]
    columns = [Column("#", True), Column("class"), Column("time", True)]
    page.add("rows", "Rows", paged_table(columns, rows, page_size=100, noun="classes"))
    return page.render()


def test_page_is_self_contained_with_a_policy_that_forbids_fetching() -> None:
    text = gallery()
    tags = collect(text)
    names = [name for name, _ in tags]
    assert "script" not in names and "link" not in names and "img" not in names
    policy = [
        a for n, a in tags if n == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert policy and policy[0]["content"] == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    # The only URL in the file is the SVG namespace, which is a name, not a fetch.
    assert set(re.findall(r"https?://[^\"'\s<>]+", text)) == {"http://www.w3.org/2000/svg"}
    assert [a.get("data-chart") for n, a in tags if n == "svg"] == [
        "timeseries",
        "bars",
        "histogram",
        "gantt",
        "curves",
    ]
    assert [a.get("href") for n, a in tags if n == "a" and a.get("href", "").startswith("#")][
        :3
    ] == [
        "#load",
        "#bars",
        "#hist",
    ]


def test_text_is_escaped_and_markup_is_not() -> None:
    assert (
        escape("<script>alert('x')</script>") == "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;"
    )
    assert escape(Markup("<b>ok</b>")) == "<b>ok</b>"
    assert tag("td", "a<b", Markup("<i>c</i>"), None, class_="num", open=True, hidden=False) == (
        '<td class="num" open>a&lt;b<i>c</i></td>'
    )
    assert tag("meta", charset="utf-8") == '<meta charset="utf-8">'
    assert tag("x", data_n=0) == '<x data-n="0"></x>'


def test_tables_pages_and_details() -> None:
    columns = [Column("name"), Column("n", numeric=True)]
    markup = table(columns, [["a", 1], ["<b>", 2]], row_classes=[None, "bad"])
    assert (
        '<td class="num">2</td>' in markup
        and "&lt;b&gt;" in markup
        and '<tr class="bad">' in markup
    )
    paged = paged_table(
        columns, [[str(i), i] for i in range(250)], page_size=100, first=21, noun="classes"
    )
    summaries = [a for n, a in collect(paged) if n == "details"]
    assert len(summaries) == 3 and "classes 21–120" in paged and "classes 221–270" in paged
    assert "open" not in paged.split(">")[0]
    assert details("s", "body", open=True).startswith("<details open>")
    assert "Events" in figures([("Events", "1.2k")])


def test_gallery_opens_clean_in_chromium(browser: Any, tmp_path: Path) -> None:
    report = tmp_path / "gallery.html"
    report.write_text(gallery(), encoding="utf-8")
    opened = browser.open(report, screenshot=tmp_path / "gallery.png")
    assert opened.console_errors == [] and opened.page_errors == [] and opened.requests == []
    assert opened.charts == {"timeseries": 1, "bars": 1, "histogram": 1, "gantt": 1, "curves": 1}
    assert opened.title == "Chart gallery"
    width, height = png_size(tmp_path / "gallery.png")
    assert width == 1280 and height > 900


def test_the_browser_check_catches_requests_and_errors(browser: Any, tmp_path: Path) -> None:
    """The checks above can fail: a page that fetches or throws is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><img src="http://192.0.2.1/x.png">'
        "<script>undefinedFunction()</script></body></html>",
        encoding="utf-8",
    )
    opened = browser.open(bad)
    assert opened.requests == ["http://192.0.2.1/x.png"]
    assert any("undefinedFunction" in error for error in opened.page_errors)
    # With govern's policy the same fetch never leaves the page: the browser refuses it.
    guarded = tmp_path / "guarded.html"
    guarded.write_text(
        f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '</head><body><img src="http://192.0.2.1/x.png"></body></html>',
        encoding="utf-8",
    )
    refused = browser.open(guarded)
    assert refused.requests == []
    assert any("Content Security Policy" in message for message in refused.console_errors)
