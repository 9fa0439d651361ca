"""Self-contained HTML pages: govern's reports open from a file, with no network at all.

Everything a report needs is inline: CSS in a ``<style>`` element, charts as SVG
(``govern.charts``), no script, no font, no image fetched from anywhere. A
Content-Security-Policy in the page itself forbids every fetch, so even text taken
from a slow log cannot make the browser reach out.
"""

from govern.html.markup import Markup, escape, join, tag

__all__ = ["Markup", "escape", "join", "tag"]
