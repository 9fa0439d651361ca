"""Reports people open in a browser: digests, digest comparisons, scheduler nights.

Each module turns documents govern already produces (the JSON contracts of
docs/json.md) into one self-contained HTML page built with ``govern.html`` and
``govern.charts``, so a report can also be made later, elsewhere, from saved JSON.
"""
