"""Pieces reports are made of: headline figures, tables, collapsible blocks, pages of rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from govern.html.markup import Markup, join, tag


@dataclass(frozen=True)
class Column:
    title: str
    numeric: bool = False


def figures(items: Iterable[tuple[str, object]]) -> Markup:
    """Headline numbers as cards: (name, value)."""
    return tag(
        "div",
        *(
            tag(
                "div",
                tag("div", value, class_="value"),
                tag("div", name, class_="name"),
                class_="figure",
            )
            for name, value in items
        ),
        class_="figures",
    )


def table(
    columns: Sequence[Column],
    rows: Iterable[Sequence[object]],
    *,
    row_classes: Sequence[str | None] | None = None,
    class_: str | None = None,
) -> Markup:
    """A table; numeric columns right-aligned; cells are escaped unless Markup."""
    head = tag(
        "thead",
        tag("tr", *(tag("th", c.title, class_="num" if c.numeric else None) for c in columns)),
    )
    body_rows = []
    for index, row in enumerate(rows):
        cells = [
            tag("td", value, class_="num" if column.numeric else None)
            for column, value in zip(columns, row, strict=True)
        ]
        marker = row_classes[index] if row_classes is not None else None
        body_rows.append(tag("tr", *cells, class_=marker))
    return tag("table", head, tag("tbody", *body_rows), class_=class_)


def details(
    summary: object,
    *body: object,
    open: bool = False,
    class_: str | None = None,
    id: str | None = None,
) -> Markup:
    """A collapsible block: closed blocks are not laid out until opened, so big pages open fast."""
    return tag("details", tag("summary", summary), *body, open=open, class_=class_, id=id)


def paged_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[object]],
    *,
    page_size: int = 100,
    first: int = 1,
    noun: str = "rows",
) -> Markup:
    """Rows cut into collapsed pages of ``page_size`` (no script: one ``<details>`` each).

    ``first`` is the number shown for the first row (ranks continue from the top N).
    """
    pages = []
    for offset in range(0, len(rows), page_size):
        chunk = rows[offset : offset + page_size]
        low, high = first + offset, first + offset + len(chunk) - 1
        pages.append(
            details(f"{noun} {low:,}–{high:,}", table(columns, chunk), class_="page-of-rows")
        )
    return join(pages)


def code(text: str) -> Markup:
    return tag("pre", tag("code", text))


def note(*text: object) -> Markup:
    return tag("p", *text, class_="note")


def badge(text: str, kind: str | None = None) -> Markup:
    return tag("span", text, class_=f"tag {kind or text}")
