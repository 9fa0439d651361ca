"""govern's own SVG charts: deterministic markup, no script, no fonts, no library.

Each function takes plain data and returns :class:`govern.html.Markup` holding one
``<svg data-chart=KIND>`` element that scales to its container. Tooltips are SVG
``<title>`` elements, so hovering works without JavaScript.
"""

from govern.charts.bars import Bar, Pair, bar_chart, histogram, paired_bars
from govern.charts.curves import Series, curve_chart
from govern.charts.gantt import Band, Marker, Task, gantt_chart
from govern.charts.timeseries import Window, time_chart

__all__ = [
    "Band",
    "Bar",
    "Marker",
    "Pair",
    "Series",
    "Task",
    "Window",
    "bar_chart",
    "curve_chart",
    "gantt_chart",
    "histogram",
    "paired_bars",
    "time_chart",
]
