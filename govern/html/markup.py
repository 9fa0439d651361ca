"""Safe markup by construction: text is escaped unless it is already :class:`Markup`.

Reports show query text, user names and host names straight from slow logs. Every
string goes through :func:`escape` on its way into a page unless it was built by
:func:`tag` (or explicitly wrapped), so nothing from a log can become markup.
"""

from __future__ import annotations

import html
from collections.abc import Iterable


class Markup(str):
    """A string that is already valid, safe HTML/SVG: inserted as is."""

    __slots__ = ()

    def __add__(self, other: str) -> Markup:
        return Markup(str.__add__(self, escape(other)))


def escape(value: object) -> Markup:
    """Text as HTML (quotes too, so it is safe in attributes); Markup passes through."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=True))


def join(parts: Iterable[object], separator: str = "") -> Markup:
    """Concatenate, escaping every part that is not Markup already."""
    return Markup(escape(separator).join(escape(part) for part in parts))


def attributes(values: dict[str, object]) -> str:
    """``key="value"`` pairs: ``class_`` → ``class``, ``data_x`` → ``data-x``; True is bare."""
    out = []
    for key, value in values.items():
        if value is None or value is False:
            continue
        name = key.rstrip("_").replace("_", "-")
        if value is True:
            out.append(f" {name}")
        else:
            out.append(f' {name}="{escape(value)}"')
    return "".join(out)


#: Elements that never have content or an end tag in HTML.
VOID = frozenset({"br", "col", "hr", "img", "input", "link", "meta", "wbr"})


def tag(element: str, /, *children: object, **attrs: object) -> Markup:
    """``<element attrs>children</element>``; children escaped unless Markup; None skipped."""
    opening = f"<{element}{attributes(attrs)}>"
    if element in VOID:
        return Markup(opening)
    inner = "".join(escape(child) for child in children if child is not None)
    return Markup(f"{opening}{inner}</{element}>")
