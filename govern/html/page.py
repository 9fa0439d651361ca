"""A report page: header, table of contents, sections, footer, all in one HTML file.

The page carries a Content-Security-Policy that forbids every fetch (``default-src
'none'``): only its inline style and inline SVG are allowed, so opening a report
never touches the network, whatever text a slow log put in it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime

from govern import __version__
from govern.errors import UsageError
from govern.html.markup import Markup, join, tag
from govern.html.style import CSS

#: No script, no fetch of any kind; inline styles and data: images only.
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


@dataclass
class Section:
    id: str
    title: str
    body: Markup


@dataclass
class Page:
    """Build a page section by section, then :meth:`render` it."""

    title: str
    subtitle: str = ""
    sections: list[Section] = field(default_factory=list)
    generated_at: datetime | None = None

    def add(self, id: str, title: str, *body: object) -> None:
        self.sections.append(Section(id, title, join(body)))

    def render(self) -> str:
        when = (self.generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
        toc = tag(
            "nav",
            *(tag("a", s.title, href=f"#{s.id}") for s in self.sections),
            class_="toc",
        )
        sections = join(tag("section", tag("h2", s.title), s.body, id=s.id) for s in self.sections)
        head = join(
            [
                tag("meta", charset="utf-8"),
                tag("meta", http_equiv="Content-Security-Policy", content=CONTENT_SECURITY_POLICY),
                tag("meta", name="viewport", content="width=device-width, initial-scale=1"),
                tag("meta", name="generator", content=f"govern {__version__}"),
                tag("title", self.title),
                tag("style", Markup(CSS)),
            ]
        )
        body = join(
            [
                tag(
                    "header",
                    tag("h1", self.title),
                    tag("p", self.subtitle) if self.subtitle else None,
                    class_="page",
                ),
                toc,
                tag("main", sections),
                tag("footer", f"govern {__version__} · generated {when}"),
            ]
        )
        return (
            "<!DOCTYPE html>\n"
            + tag("html", tag("head", head), tag("body", body), lang="en")
            + "\n"
        )


def anchor(prefix: str, key: str) -> str:
    """An element id from arbitrary text (class IDs, job names): letters, digits, ``-``, ``_``."""
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in key)
    return f"{prefix}-{safe}"


def clock(stamp: str | None) -> str:
    """An ISO 8601 timestamp from a document as ``2024-03-01 10:00:00 UTC`` ('' for None)."""
    if not stamp:
        return ""
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def write_page(text: str, destination: str) -> None:
    """Write a page to ``destination`` (``-`` is stdout) whole or not at all.

    A report is written next to its final name and renamed into place, so a reader
    never opens half a file and a failed run leaves the previous report intact.
    """
    if destination == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = os.path.abspath(destination)
    directory = os.path.dirname(target)
    try:
        fd, temporary = tempfile.mkstemp(prefix=".govern-report-", suffix=".html", dir=directory)
    except OSError as exc:
        raise UsageError(f"-o {destination}: cannot write there ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise UsageError(f"-o {destination}: cannot write there ({exc.strerror})") from None
