"""Take the README's picture: the HTML digest of the shipped example log, in Chromium.

    .venv/bin/python scripts/readme-picture.py      # writes docs/images/digest-report.png

Needs the test extras (Playwright) and Debian's chromium, as `bash scripts/test` installs them.
The page is `govern digest examples/digest/rules-slow.log.gz --format html`: the summary and the
findings the rule catalog makes of a recorded workload.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parent.parent
PICTURE = REPO / "docs" / "images" / "digest-report.png"
LOG = "examples/digest/rules-slow.log.gz"


def main() -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("no chromium on PATH (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "report.html"
        command = ["digest", LOG, "--target", "mariadb-10.11", "--format", "html"]
        subprocess.run(
            [sys.executable, "-m", "govern", *command, "-o", str(page_path)], cwd=REPO, check=True
        )
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1100, "height": 830})
            page.goto(page_path.as_uri())
            page.screenshot(path=str(PICTURE))
            browser.close()
    print(PICTURE.relative_to(REPO))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
