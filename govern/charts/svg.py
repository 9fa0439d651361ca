"""SVG building blocks shared by every chart: the frame, deterministic numbers, colours.

Coordinates are rounded to 0.1 px, so the same data gives byte-identical markup on
every machine (tests compare it as text) and files stay small.
"""

from __future__ import annotations

from govern.html.markup import Markup, escape, tag

#: Okabe–Ito colours: distinguishable with the common colour-vision deficiencies.
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # green
    "#CC79A7",  # purple
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",
)
INK = "#1f2328"
MUTED = "#57606a"
GRID = "#d0d7de"
SHADE = "#d55e00"
#: Character width of the 11 px chart font, for fitting labels without measuring text.
CHAR_WIDTH = 6.2
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


def num(value: float) -> str:
    """A coordinate: at most one decimal, no ``.0``, no ``-0``."""
    text = f"{value:.1f}"
    if text.endswith(".0"):
        text = text[:-2]
    return "0" if text == "-0" else text


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def fits(label: str, width: float) -> bool:
    """Would ``label`` fit in ``width`` pixels at the chart font size (with padding)?"""
    return len(label) * CHAR_WIDTH + 8 <= width


def clip_label(label: str, width: float) -> str:
    """Cut a label to ``width`` pixels, ending with an ellipsis when cut."""
    room = int(width / CHAR_WIDTH)
    if len(label) <= room:
        return label
    return label[: max(room - 1, 0)] + "…" if room > 1 else ""


def text(x: float, y: float, content: object, **attrs: object) -> Markup:
    return tag("text", content, x=num(x), y=num(y), **attrs)


def line(x1: float, y1: float, x2: float, y2: float, **attrs: object) -> Markup:
    return tag("line", x1=num(x1), y1=num(y1), x2=num(x2), y2=num(y2), **attrs)


def rect(
    x: float, y: float, width: float, height: float, *children: object, **attrs: object
) -> Markup:
    return tag(
        "rect",
        *children,
        x=num(x),
        y=num(y),
        width=num(max(width, 0.0)),
        height=num(max(height, 0.0)),
        **attrs,
    )


def tooltip(content: object) -> Markup:
    """A native hover tooltip (SVG ``<title>`` child): no script needed."""
    return tag("title", content)


def path(points: list[tuple[float, float]], **attrs: object) -> Markup:
    """A polyline as a path (``M x,y L x,y …``); empty for no points."""
    if not points:
        return Markup("")
    commands = " ".join(f"{num(x)},{num(y)}" for x, y in points)
    return tag("path", d=f"M{commands}", **attrs)


def frame(kind: str, label: str, width: int, height: int, *body: object) -> Markup:
    """The outer ``<svg>``: scales to its container, says what it shows to screen readers.

    ``data-chart`` names the kind of chart so tests (and people) can find it.
    """
    return tag(
        "svg",
        tooltip(label),
        *body,
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {width} {height}",
        width=str(width),
        height=str(height),
        role="img",
        aria_label=label,
        class_="chart",
        data_chart=kind,
        font_family=FONT,
        font_size="11",
        fill=INK,
    )


def empty(kind: str, label: str, message: str, width: int = 900, height: int = 60) -> Markup:
    """A chart with nothing to draw still says so, in the chart's place."""
    return frame(
        kind,
        label,
        width,
        height,
        text(width / 2, height / 2 + 4, message, text_anchor="middle", fill=MUTED),
    )


__all__ = ["Markup", "escape", "tag"]
