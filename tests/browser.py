"""Open report files in a real headless Chromium (Debian's package) and say what happened.

Playwright (PyPI, a test dependency) drives ``/usr/bin/chromium``; browsers that
test tools download do not work here, and none is needed. Every request that is
not the file itself is recorded and aborted, so a report that tries to reach the
network fails its test instead of reaching out.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: Flags known to work as root on a machine without network (see docs/design/reports.md, "Tests").
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    given = os.environ.get("GOVERN_CHROMIUM")
    if given:
        return given
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass
class Opened:
    """What a report did in the browser."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    charts: dict[str, int] = field(default_factory=dict)
    screenshot: Path | None = None
    load_seconds: float = 0.0
    title: str = ""
    page: Any = None

    @property
    def clean(self) -> bool:
        return not (self.console_errors or self.page_errors or self.requests)


class Browser:
    def __init__(self, browser: Any) -> None:
        self._browser = browser

    def open(self, path: Path, screenshot: Path | None = None, keep: bool = False) -> Opened:
        """Load ``path`` (a file), wait for it, count charts, take a full-page screenshot."""
        context = self._browser.new_context(viewport={"width": 1280, "height": 900})
        opened = Opened()
        url = path.resolve().as_uri()

        def on_route(route: Any) -> None:
            if route.request.url == url:
                route.continue_()
            else:
                opened.requests.append(route.request.url)
                route.abort()

        context.route("**/*", on_route)
        page = context.new_page()
        page.on(
            "console",
            lambda message: (
                opened.console_errors.append(message.text)
                if message.type in ("error", "warning")
                else None
            ),
        )
        page.on("pageerror", lambda error: opened.page_errors.append(str(error)))
        started = time.perf_counter()
        page.goto(url, wait_until="load")
        opened.load_seconds = time.perf_counter() - started
        opened.title = page.title()
        opened.charts = page.evaluate(
            """() => {
                const counts = {};
                for (const svg of document.querySelectorAll('svg[data-chart]')) {
                    const box = svg.getBoundingClientRect();
                    const kind = svg.dataset.chart;
                    // Only charts drawn on the page count: not those in closed <details>.
                    if (box.width > 0 && box.height > 0 && svg.checkVisibility() && svg.childElementCount > 1)
                        counts[kind] = (counts[kind] || 0) + 1;
                }
                return counts;
            }"""
        )
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=True)
            opened.screenshot = screenshot
        if keep:
            opened.page = page
        else:
            context.close()
        return opened


def launch() -> Iterator[Browser]:
    """A headless Chromium for the session, or a skip saying what is missing."""
    executable = chromium_path()
    if executable is None:
        pytest.skip("no chromium on PATH (scripts/test installs Debian's chromium package)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[test]')")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield Browser(browser)
        finally:
            browser.close()


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG header: a screenshot that is really an image."""
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
